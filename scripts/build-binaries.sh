#!/usr/bin/env bash
# build-binaries.sh builds the real Kubernetes control-plane binaries that
# driftwatch's local clusters (tests, demo, bench) run: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl from k8s.io/kubernetes,
# etcd from go.etcd.io/etcd/server/v3 and kwok from sigs.k8s.io/kwok, all
# through the Go module proxy. Only Go is needed.
#
# The binaries land in a per-version cache folder. When they are all there the
# script returns at once. Progress goes to stderr; the bin folder is the only
# thing printed on stdout, so callers can do:
#
#   export DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh)"
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
# Prometheus tags its Go module v0.x.y for release 3.x.y; keep in step with
# PromtoolVersion in deploy/monitoring/monitoring_test.go.
PROMTOOL_VERSION="${PROMTOOL_VERSION:-v0.316.0}"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/driftwatch"
stamp="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
bin_dir="${cache_root}/${stamp}/bin"
work_dir="${cache_root}/${stamp}/build"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

log() { printf 'build-binaries: %s\n' "$*" >&2; }

# build_promtool builds promtool, which runs the unit tests of the
# Prometheus rules in deploy/monitoring, into a cache folder of its own
# (where deploy/monitoring's test looks for it). It does not touch the
# control-plane folder.
build_promtool() {
  local dir="${cache_root}/promtool-${PROMTOOL_VERSION}/bin"
  [[ -x "${dir}/promtool" ]] && return 0
  command -v go >/dev/null || { log "go is not on PATH; install Go 1.26 first"; exit 1; }
  log "promtool ${PROMTOOL_VERSION}: building into ${dir} (once)"
  mkdir -p "${dir}"
  GOBIN="${dir}" GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}" \
    go install "github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_VERSION}" >&2
}
build_promtool

all_present() {
  local b
  for b in "${binaries[@]}"; do
    [[ -x "${bin_dir}/${b}" ]] || return 1
  done
}

if all_present; then
  echo "${bin_dir}"
  exit 0
fi

command -v go >/dev/null || { log "go is not on PATH; install Go 1.26 first"; exit 1; }
mkdir -p "${cache_root}" "${work_dir}"

# One build at a time per version folder (two test runs may start together).
exec 9>"${cache_root}/${stamp}.lock"
if command -v flock >/dev/null; then
  flock 9
  if all_present; then
    echo "${bin_dir}"
    exit 0
  fi
fi

export GOFLAGS="-buildvcs=false -mod=mod"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CGO_ENABLED=0
tmp_bin="${work_dir}/bin.tmp"
rm -rf "${tmp_bin}"
mkdir -p "${tmp_bin}"

start_all=$(date +%s)

# run_step NAME LOGFILE CMD... runs a long command with a heartbeat on stderr
# every 20 seconds, and shows the tail of its log when it fails.
run_step() {
  local name="$1" logfile="$2"
  shift 2
  local start
  start=$(date +%s)
  log "${name}: started (log: ${logfile})"
  "$@" >"${logfile}" 2>&1 &
  local pid=$!
  while kill -0 "${pid}" 2>/dev/null; do
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
      sleep 2
      kill -0 "${pid}" 2>/dev/null || break
    done
    if kill -0 "${pid}" 2>/dev/null; then
      log "${name}: still working, $(($(date +%s) - start))s elapsed"
    fi
  done
  if ! wait "${pid}"; then
    log "${name}: FAILED after $(($(date +%s) - start))s; last lines of ${logfile}:"
    tail -n 40 "${logfile}" >&2
    exit 1
  fi
  log "${name}: done in $(($(date +%s) - start))s"
}

# --- Kubernetes: a throwaway wrapper module that requires k8s.io/kubernetes
# and replaces every staging module with the same-named published version.
k8s_mod="${work_dir}/k8s"
mkdir -p "${k8s_mod}"
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
  cloud-provider cluster-bootstrap code-generator component-base component-helpers
  controller-manager cri-api cri-client cri-streaming csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver streaming)
staging_version="v0.${K8S_VERSION#v1.}"
{
  echo "module driftwatch.local/k8sbin"
  echo
  echo "go 1.26"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  for m in "${staging[@]}"; do
    echo "	k8s.io/${m} => k8s.io/${m} ${staging_version}"
  done
  echo ")"
} >"${k8s_mod}/go.mod"
cat >"${k8s_mod}/tools.go" <<'GO'
//go:build tools

// Package tools pins the Kubernetes commands this wrapper module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
k8s_minor="${K8S_VERSION#v1.}"
k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${k8s_minor} -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${k8s_minor}"

log "building Kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION} and kwok ${KWOK_VERSION} into ${bin_dir}"
log "a cold build takes about 15 minutes and 3 GB of Go build cache on 2 cores; later runs return at once"

run_step "kubernetes modules" "${work_dir}/k8s-mod.log" \
  bash -c "cd '${k8s_mod}' && go mod tidy"
run_step "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl" "${work_dir}/k8s-build.log" \
  bash -c "cd '${k8s_mod}' && go build -trimpath -ldflags '${k8s_ldflags}' -o '${tmp_bin}/' k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl"

# --- etcd: its server module is a main package.
etcd_mod="${work_dir}/etcd"
mkdir -p "${etcd_mod}"
cat >"${etcd_mod}/go.mod" <<GOMOD
module driftwatch.local/etcdbin

go 1.26

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
GOMOD
cat >"${etcd_mod}/tools.go" <<'GO'
//go:build tools

// Package tools pins the etcd server this wrapper module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
GO
run_step "etcd modules" "${work_dir}/etcd-mod.log" bash -c "cd '${etcd_mod}' && go mod tidy"
run_step "etcd" "${work_dir}/etcd-build.log" \
  bash -c "cd '${etcd_mod}' && go build -trimpath -ldflags '-s -w' -o '${tmp_bin}/etcd' go.etcd.io/etcd/server/v3"

# --- kwok: fake nodes and pods.
kwok_mod="${work_dir}/kwok"
mkdir -p "${kwok_mod}"
cat >"${kwok_mod}/go.mod" <<GOMOD
module driftwatch.local/kwokbin

go 1.26

require sigs.k8s.io/kwok ${KWOK_VERSION}
GOMOD
cat >"${kwok_mod}/tools.go" <<'GO'
//go:build tools

// Package tools pins the kwok command this wrapper module builds.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
GO
run_step "kwok modules" "${work_dir}/kwok-mod.log" bash -c "cd '${kwok_mod}' && go mod tidy"
run_step "kwok" "${work_dir}/kwok-build.log" \
  bash -c "cd '${kwok_mod}' && go build -trimpath -ldflags '-s -w' -o '${tmp_bin}/kwok' sigs.k8s.io/kwok/cmd/kwok"

mkdir -p "${bin_dir}"
for b in "${binaries[@]}"; do
  mv -f "${tmp_bin}/${b}" "${bin_dir}/${b}"
done
rm -rf "${tmp_bin}"
log "all binaries ready in $(($(date +%s) - start_all))s: ${bin_dir}"
echo "${bin_dir}"
