#!/usr/bin/env bash
# Builds a static driftwatch binary (no cgo, no dynamic loader, kustomize's
# Go plugin loader left out as in every build of the project's scripts), as
# the Dockerfile does and as deploy/deploy_test.go checks.
#   scripts/build-static.sh OUT [VERSION]
set -euo pipefail
out="${1:?usage: scripts/build-static.sh OUT [VERSION]}"
version="${2:-dev}"
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -tags kustomize_disable_go_plugin_support -trimpath -ldflags "-s -w -X main.version=${version}" -o "${out}" .
