#!/usr/bin/env bash
# screenshots.sh regenerates the README's images:
#
# - the terminal UI screenshots (docs/screenshots/*.svg): TestScreenshots in
#   tui/ renders the overview, a cluster, a node and the help screen at
#   120x32 in colour from the real views, fed the golden tests' recorded
#   snapshot, and writes their ANSI text; freeze turns each into an SVG.
#   docs/screenshots.sha256 records the hash of each view's text: the same
#   test fails under scripts/test.sh when a view changes and the images were
#   not regenerated.
# - with --bench, the performance chart and table (docs/bench.svg,
#   docs/bench.txt) from a default `driftwatch bench --chart` run on local
#   control planes (about 5 minutes; the binaries come from
#   scripts/build-binaries.sh unless DRIFTWATCH_BIN_DIR is set).
#
# freeze (github.com/charmbracelet/freeze) is built once from its Go module
# into ${XDG_CACHE_HOME:-~/.cache}/driftwatch/tools/. Running the script
# twice in a row changes nothing the second time (except the bench figures).
#
#   scripts/screenshots.sh           # the screenshots
#   scripts/screenshots.sh --bench   # the screenshots and the bench chart
set -euo pipefail

cd "$(dirname "$0")/.."

FREEZE_VERSION="v0.2.2"
VIEWS=(overview cluster node help)

log() { printf 'screenshots: %s\n' "$*" >&2; }

bench=false
case "${1:-}" in
  "") ;;
  --bench) bench=true ;;
  -h | --help)
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 0
    ;;
  *)
    log "unknown argument $1 (want --bench or nothing)"
    exit 2
    ;;
esac

# build_freeze prints the path of freeze ${FREEZE_VERSION}, building it
# into the tool cache when it is missing or another version.
build_freeze() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/driftwatch/tools/freeze-${FREEZE_VERSION}/bin"
  if ! "${dir}/freeze" --version 2>/dev/null | grep -qF "${FREEZE_VERSION}"; then
    log "building freeze ${FREEZE_VERSION} from its Go module into ${dir} (once; 1-3 minutes)"
    mkdir -p "${dir}"
    GOBIN="${dir}" go install "github.com/charmbracelet/freeze@${FREEZE_VERSION}"
  fi
  echo "${dir}/freeze"
}

command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
freeze="$(build_freeze)"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

log "rendering the views at 120x32 (go test -run TestScreenshots ./tui/)"
go test -count=1 -run '^TestScreenshots$' ./tui/ -args -screenshots "${tmp}" >&2

mkdir -p docs/screenshots
for v in "${VIEWS[@]}"; do
  log "freeze ${v}.ansi -> docs/screenshots/${v}.svg"
  "${freeze}" --language ansi --window --no-font.ligatures \
    --output "docs/screenshots/${v}.svg" "${tmp}/${v}.ansi" >&2
  # The font is embedded; a viewer that cannot load it still gets a
  # monospace one, so the columns stay aligned.
  sed -i 's/font-family="JetBrains Mono"/font-family="JetBrains Mono, monospace"/' "docs/screenshots/${v}.svg"
done
cp "${tmp}/screenshots.sha256" docs/screenshots.sha256
log "wrote docs/screenshots/*.svg and docs/screenshots.sha256"

if [[ "${bench}" == true ]]; then
  if [[ -z "${DRIFTWATCH_BIN_DIR:-}" ]]; then
    log "control-plane binaries (scripts/build-binaries.sh)"
    DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh)"
  fi
  export DRIFTWATCH_BIN_DIR
  go build -tags kustomize_disable_go_plugin_support -o "${tmp}/driftwatch" .
  log "a default bench run (watch, poll and burst; about 5 minutes, progress below)"
  "${tmp}/driftwatch" bench --chart "${tmp}/bench.svg" >"${tmp}/bench.txt"
  mv "${tmp}/bench.svg" docs/bench.svg
  mv "${tmp}/bench.txt" docs/bench.txt
  log "wrote docs/bench.svg and docs/bench.txt (copy docs/bench.txt into docs/performance.md, section "Watch against poll")"
fi
