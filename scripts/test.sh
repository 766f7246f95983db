#!/usr/bin/env bash
# test.sh runs driftwatch's full test suite: it builds (or finds in the
# cache) the real control-plane binaries and the Terraform tools, exports
# DRIFTWATCH_BIN_DIR and DRIFTWATCH_TOFU_DIR so that real-cluster and real
# tofu tests run instead of skipping, checks formatting, vets, runs
# staticcheck (installed at a pinned version), runs every test with the race
# detector and ends with a short fuzz run.
set -euo pipefail

cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "control-plane binaries and Terraform tools (scripts/build-binaries.sh --env)"
build_env="$(scripts/build-binaries.sh --env)"
eval "${build_env}"
printf 'DRIFTWATCH_BIN_DIR=%s\nDRIFTWATCH_TOFU_DIR=%s\n' "${DRIFTWATCH_BIN_DIR}" "${DRIFTWATCH_TOFU_DIR}" >&2

# The Git source tests (config/gitsource) build, serve and sign
# repositories with the git binary (git http-backend, and ssh-keygen for
# SSH signatures): they fail without them.
if ! command -v git >/dev/null || ! command -v ssh-keygen >/dev/null; then
  step "git and ssh-keygen for config/gitsource's tests (apt-get install git openssh-client)"
  if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null; then
    printf 'install git and ssh-keygen (Debian: apt-get install git openssh-client)\n' >&2
    exit 1
  fi
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git openssh-client >&2
fi

# Every build and test below leaves kustomize's Go plugin loader out, as
# the project's other scripts and the image build do: driftwatch never
# loads Go plugins (kustomize runs with its builtin plugins only), and the
# loader imports Go's plugin package, which with cgo makes the linker keep
# every exported method and link externally: a binary 33 MB larger, about
# 5 MiB more resident and slower to start (docs/performance.md, "Reading
# a peak RSS"). TestBuildsLeaveOutGoPlugins checks the tag still does it.
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-tags=kustomize_disable_go_plugin_support"

step "gofmt -l ."
unformatted="$(gofmt -l .)"
if [[ -n "${unformatted}" ]]; then
  printf 'these files need gofmt -w:\n%s\n' "${unformatted}" >&2
  exit 1
fi

step "go vet ./..."
go vet ./...

# staticcheck at a pinned version, installed once: the binary in GOBIN (or
# the first GOPATH's bin) is reused while it is this version built by this
# Go toolchain (an older Go cannot load packages written for a newer one).
STATICCHECK_VERSION="v0.8.2"
step "staticcheck ${STATICCHECK_VERSION} ./..."
gobin="$(go env GOBIN)"
if [[ -z "${gobin}" ]]; then
  gopath="$(go env GOPATH)"
  gobin="${gopath%%:*}/bin"
fi
staticcheck="${gobin}/staticcheck"
if ! go version -m "${staticcheck}" 2>/dev/null |
  awk -v want="${STATICCHECK_VERSION}" -v gover="$(go env GOVERSION)" '
    NR == 1 && $NF == gover { go = 1 }
    $1 == "mod" && $2 == "honnef.co/go/tools" && $3 == want { mod = 1 }
    END { exit !(go && mod) }'; then
  printf 'installing honnef.co/go/tools/cmd/staticcheck@%s into %s\n' "${STATICCHECK_VERSION}" "${gobin}" >&2
  GOBIN="${gobin}" go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi
"${staticcheck}" ./...

step "go test -race -count=1 -timeout 20m -v ./..."
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
# The full verbose output goes to the log; the console shows the results.
set +e
go test -race -count=1 -timeout 20m -v ./... >"${log}" 2>&1
status=$?
set -e
grep -E '^(ok|FAIL|panic:|---|    ---)' "${log}" || true
if [[ ${status} -ne 0 ]]; then
  printf '\ntests failed; full output:\n' >&2
  cat "${log}" >&2
  # The end of the output is what a reader sees first: repeat there which
  # tests failed, each with the lines it logged just before its verdict.
  printf '\n==> the failures again (go test exit %d):\n' "${status}" >&2
  grep -n -B 25 -E '^\s*--- FAIL|^panic:|^WARNING: DATA RACE|^FAIL\s' "${log}" | tail -n 300 >&2 || true
  exit 1
fi

# Under this script every real-cluster test must run: a skip here means a
# test did not get the control planes it needs.
step "no skipped tests"
if grep -E '^\s*--- SKIP' "${log}"; then
  printf 'the tests above were skipped under scripts/test.sh\n' >&2
  exit 1
fi

# The core is proved without any control plane: its packages must keep at
# least 80% statement coverage from their own unit tests: the hub, the
# Kubernetes drift engine, the API and the notifications. The packages that
# talk to a coordination cluster (internal/coord: Leases; hub/intent: the
# state file and its ConfigMap form) are measured with their real
# control-plane tests, at the same bar.
step "core coverage (go test -cover: hub, clusters/drift, internal/api, internal/notify at least 80% each; internal/coord and hub/intent with a control plane)"
check_cover() {
  awk '/coverage:/ { for (i = 1; i <= NF; i++) if ($i == "coverage:") { pct = $(i + 1); sub("%", "", pct); if (pct + 0 < 80) { print "below 80%: " $2; bad = 1 } } } END { exit bad }'
}
core_pkgs="./hub ./clusters/drift ./internal/api/... ./internal/notify"
# shellcheck disable=SC2086 # one package per word
# The output is printed before the status is looked at, so a failing test
# shows its name and message here rather than only an exit code.
cover_status=0
cover="$(env -u DRIFTWATCH_BIN_DIR -u DRIFTWATCH_TOFU_DIR go test -count=1 -cover ${core_pkgs} 2>&1)" || cover_status=$?
cover+=$'\n'"$(go test -count=1 -cover ./internal/coord ./hub/intent 2>&1)" || cover_status=$?
printf '%s\n' "${cover}"
if [[ "${cover_status}" -ne 0 ]]; then
  echo "core coverage: a test failed (exit ${cover_status})" >&2
  exit "${cover_status}"
fi
if ! check_cover <<<"${cover}"; then
  exit 1
fi

# A count, not a duration: a timed fuzz run can end with "context deadline
# exceeded" on a loaded machine although no input failed.
step "fuzz FuzzNodeIDRoundTrip, FuzzUnpack, FuzzDecodeFast, FuzzMarshal, FuzzUnmarshal, FuzzPlainMembers, FuzzPlainEdit (50,000 inputs each)"
go test -run '^$' -fuzz '^FuzzNodeIDRoundTrip$' -fuzztime 50000x ./hub/
go test -run '^$' -fuzz '^FuzzNodeIDRoundTrip$' -fuzztime 50000x ./clusters/terraform/
go test -run '^$' -fuzz '^FuzzUnpack$' -fuzztime 50000x ./internal/pack/
go test -run '^$' -fuzz '^FuzzDecodeFast$' -fuzztime 50000x ./config/manifest/
go test -run '^$' -fuzz '^FuzzMarshal$' -fuzztime 50000x ./clusters/kubeobj/
go test -run '^$' -fuzz '^FuzzUnmarshal$' -fuzztime 50000x ./clusters/kubeobj/
go test -run '^$' -fuzz '^FuzzPlainMembers$' -fuzztime 50000x ./clusters/kubeobj/
go test -run '^$' -fuzz '^FuzzPlainEdit$' -fuzztime 50000x ./config/

step "all checks passed"
