#!/usr/bin/env bash
# test.sh runs driftwatch's full test suite: it builds (or finds in the
# cache) the real control-plane binaries, exports DRIFTWATCH_BIN_DIR so that
# real-cluster tests run instead of skipping, checks formatting, vets, runs
# every test with the race detector and ends with a short fuzz run.
set -euo pipefail

cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "control-plane binaries (scripts/build-binaries.sh)"
DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh)"
export DRIFTWATCH_BIN_DIR
printf 'DRIFTWATCH_BIN_DIR=%s\n' "${DRIFTWATCH_BIN_DIR}" >&2

step "gofmt -l ."
unformatted="$(gofmt -l .)"
if [[ -n "${unformatted}" ]]; then
  printf 'these files need gofmt -w:\n%s\n' "${unformatted}" >&2
  exit 1
fi

step "go vet ./..."
go vet ./...

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
  exit 1
fi

# Under this script every real-cluster test must run: a skip here means a
# test did not get the control planes it needs.
step "no skipped tests"
if grep -E '^\s*--- SKIP' "${log}"; then
  printf 'the tests above were skipped under scripts/test.sh\n' >&2
  exit 1
fi

step "fuzz FuzzNodeIDRoundTrip (5s)"
go test -run '^$' -fuzz '^FuzzNodeIDRoundTrip$' -fuzztime 5s ./hub/

step "all checks passed"
