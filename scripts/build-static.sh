#!/usr/bin/env bash
# Builds a static driftwatch binary (no cgo, no dynamic loader), as the
# Dockerfile does and as deploy/deploy_test.go checks.
#   scripts/build-static.sh OUT [VERSION]
set -euo pipefail
out="${1:?usage: scripts/build-static.sh OUT [VERSION]}"
version="${2:-dev}"
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${out}" .
