#!/usr/bin/env bash
# build-binaries.sh builds the real binaries that driftwatch's tests, demo and
# bench run, all through the Go module proxy (only Go is needed):
#
#   - the Kubernetes control plane: kube-apiserver, kube-controller-manager,
#     kube-scheduler and kubectl from k8s.io/kubernetes, etcd from
#     go.etcd.io/etcd/server/v3 and kwok from sigs.k8s.io/kwok;
#   - the Terraform tools: tofu from github.com/opentofu/opentofu and the
#     hashicorp/local provider (github.com/hashicorp/terraform-provider-local)
#     in a filesystem mirror, for the Terraform backend's tests and demo.
#
# Each set lands in a per-version cache folder. When a set is there, its build
# is skipped. Progress goes to stderr; stdout holds only folders, so callers
# can do:
#
#   export DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh)"   # both sets; prints the Kubernetes bin folder
#   eval "$(scripts/build-binaries.sh --env)"                   # both sets; prints export lines for both folders
#   export DRIFTWATCH_TOFU_DIR="$(scripts/build-binaries.sh tofu)"  # only the Terraform tools; prints their folder
#   export DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh k8s)"    # only the control plane (what the demo needs)
#
# The default and --env also build promtool (the unit tests of the alert
# rules in deploy/monitoring) into a folder of its own.
#
# The Terraform tools folder holds bin/tofu, mirror/ (the provider mirror) and
# tofurc (a CLI config pointing at the mirror, for TF_CLI_CONFIG_FILE).
set -euo pipefail

mode="${1:-default}"
case "${mode}" in
default | --env | tofu | k8s) ;;
*)
  printf 'usage: %s [--env | tofu | k8s]\n' "$0" >&2
  exit 2
  ;;
esac

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
# Prometheus tags its Go module v0.x.y for release 3.x.y; keep in step with
# PromtoolVersion in deploy/monitoring/monitoring_test.go.
PROMTOOL_VERSION="${PROMTOOL_VERSION:-v0.316.0}"
# The Terraform tools. Keep TOFU_VERSION and LOCAL_PROVIDER_VERSION in step
# with clusters/terraform (ToolsStamp), which finds this folder by name.
TOFU_VERSION="${TOFU_VERSION:-v1.12.6}"
LOCAL_PROVIDER_VERSION="${LOCAL_PROVIDER_VERSION:-v1.4.0}"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/driftwatch"
stamp="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
bin_dir="${cache_root}/${stamp}/bin"
work_dir="${cache_root}/${stamp}/build"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

tofu_stamp="tofu-${TOFU_VERSION}_local-${LOCAL_PROVIDER_VERSION}"
tofu_dir="${cache_root}/${tofu_stamp}"
tofu_work="${tofu_dir}/build"
local_plain="${LOCAL_PROVIDER_VERSION#v}"
provider_rel="mirror/registry.opentofu.org/hashicorp/local/${local_plain}/linux_amd64/terraform-provider-local_${LOCAL_PROVIDER_VERSION}"

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

all_present() {
  local b
  for b in "${binaries[@]}"; do
    [[ -x "${bin_dir}/${b}" ]] || return 1
  done
}

tofu_present() {
  [[ -x "${tofu_dir}/bin/tofu" && -x "${tofu_dir}/${provider_rel}" && -f "${tofu_dir}/tofurc" ]]
}

need_go() {
  command -v go >/dev/null || {
    log "go is not on PATH; install Go 1.26 first"
    exit 1
  }
}

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

# build_k8s builds the Kubernetes control-plane binaries into bin_dir
# unless they are all there.
build_k8s() {
  all_present && return 0
  need_go
  mkdir -p "${cache_root}" "${work_dir}"
  # One build at a time per version folder (two test runs may start together).
  exec 9>"${cache_root}/${stamp}.lock"
  if command -v flock >/dev/null; then
    flock 9
    all_present && return 0
  fi
  (
    export GOFLAGS="-buildvcs=false -mod=mod"
    export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
    export CGO_ENABLED=0
    tmp_bin="${work_dir}/bin.tmp"
    rm -rf "${tmp_bin}"
    mkdir -p "${tmp_bin}"
    start_all=$(date +%s)

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
log "Kubernetes binaries ready in $(($(date +%s) - start_all))s: ${bin_dir}"
)
}

# copy_module MODULE@VERSION DEST downloads a module through the Go module
# proxy and copies its source to DEST, writable.
copy_module() {
  local src
  src="$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -n "${src}" ]] || {
    echo "go mod download $1: no source folder" >&2
    return 1
  }
  rm -rf "$2"
  cp -r "${src}" "$2"
  chmod -R u+w "$2"
}

# build_tofu builds tofu and the hashicorp/local provider into tofu_dir
# unless they are there. Both modules hold replace directives or vendor
# folders, so `go install module@version` refuses them: each is built from a
# writable copy of its downloaded source.
build_tofu() {
  tofu_present && return 0
  need_go
  mkdir -p "${cache_root}" "${tofu_work}"
  exec 8>"${cache_root}/${tofu_stamp}.lock"
  if command -v flock >/dev/null; then
    flock 8
    tofu_present && return 0
  fi
  (
    export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
    export CGO_ENABLED=0
    start_all=$(date +%s)
    log "building OpenTofu ${TOFU_VERSION} and the local provider ${LOCAL_PROVIDER_VERSION} into ${tofu_dir}"
    log "a cold build takes about 3 minutes on 2 cores; later runs return at once"
    tmp="${tofu_work}/out.tmp"
    rm -rf "${tmp}"
    mkdir -p "${tmp}"

    run_step "opentofu module" "${tofu_work}/tofu-mod.log" \
      copy_module "github.com/opentofu/opentofu@${TOFU_VERSION}" "${tofu_work}/opentofu"
    run_step "tofu" "${tofu_work}/tofu-build.log" \
      bash -c "cd '${tofu_work}/opentofu' && GOFLAGS='-buildvcs=false -mod=mod' go build -trimpath -ldflags '-s -w' -o '${tmp}/tofu' ./cmd/tofu"

    run_step "terraform-provider-local module" "${tofu_work}/local-mod.log" \
      copy_module "github.com/hashicorp/terraform-provider-local@${LOCAL_PROVIDER_VERSION}" "${tofu_work}/local"
    # The provider vendors its dependencies: build from vendor/.
    run_step "terraform-provider-local" "${tofu_work}/local-build.log" \
      bash -c "cd '${tofu_work}/local' && GOFLAGS='-buildvcs=false' go build -trimpath -ldflags '-s -w' -o '${tmp}/terraform-provider-local' ."

    mkdir -p "${tofu_dir}/bin" "$(dirname "${tofu_dir}/${provider_rel}")"
    mv -f "${tmp}/terraform-provider-local" "${tofu_dir}/${provider_rel}"
    cat >"${tofu_dir}/tofurc.tmp" <<RC
# CLI config for tofu: providers come from the local mirror only.
provider_installation {
  filesystem_mirror {
    path = "${tofu_dir}/mirror"
  }
}
RC
    mv -f "${tofu_dir}/tofurc.tmp" "${tofu_dir}/tofurc"
    # tofu last: tofu_present checks it first.
    mv -f "${tmp}/tofu" "${tofu_dir}/bin/tofu"
    rm -rf "${tmp}" "${tofu_work}/opentofu" "${tofu_work}/local"
    log "Terraform tools ready in $(($(date +%s) - start_all))s: ${tofu_dir}"
  )
}

case "${mode}" in
default)
  build_k8s
  build_tofu
  build_promtool
  echo "${bin_dir}"
  ;;
k8s)
  build_k8s
  echo "${bin_dir}"
  ;;
--env)
  build_k8s
  build_tofu
  build_promtool
  printf 'export DRIFTWATCH_BIN_DIR=%q\nexport DRIFTWATCH_TOFU_DIR=%q\n' "${bin_dir}" "${tofu_dir}"
  ;;
tofu)
  build_tofu
  echo "${tofu_dir}"
  ;;
esac
