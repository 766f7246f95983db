#!/usr/bin/env bash
# bench-ab.sh compares this tree with another version of driftwatch: it
# builds both, runs `driftwatch bench -o json` N times for each (default 5),
# alternating old and new so that a machine whose speed drifts moves both
# alike, and prints `driftwatch bench compare OLD... -- NEW...`, which marks
# a figure better or worse only when the medians are more than 10% apart and
# a Mann-Whitney U test of the runs gives p < 0.05 (4 runs a side at least).
#
# OLD is a git revision (a commit, tag or branch: built from a temporary
# worktree) or the path of a driftwatch binary. As root, the page cache is
# dropped before each run (echo 1 > /proc/sys/vm/drop_caches), so that the
# peak RSS's file-backed part (the binary's pages) is read the same way for
# both; otherwise the script says that part is not comparable.
#
# Each run's JSON report and progress log are kept in a results folder
# (BENCH_AB_RESULTS, default a new folder under $TMPDIR). BENCH_AB_STATIC=1
# builds both as the container image does (scripts/build-static.sh: no
# cgo, stripped): the binary as shipped, whose file-backed pages differ
# from a default build's.
#
#   scripts/bench-ab.sh main                      # 5 runs each of --mode all
#   scripts/bench-ab.sh v0.4.0 8 --mode burst     # 8 runs each of the burst
#   scripts/bench-ab.sh /usr/local/bin/driftwatch # an installed binary
#   BENCH_AB_STATIC=1 scripts/bench-ab.sh main 5 --mode watch  # as shipped
set -euo pipefail

cd "$(dirname "$0")/.."

usage() {
  cat >&2 <<'EOF'
usage: scripts/bench-ab.sh OLD [N [BENCH FLAGS...]]

Builds this tree and OLD (a git revision, or the path of a driftwatch
binary), runs `driftwatch bench -o json` N times for each (default 5, at
least 4), alternating, and prints `driftwatch bench compare` of the two sets.
Flags after N go to every run (see `driftwatch bench -h`); -o is set by this
script.

Environment:
  BENCH_AB_RESULTS  folder for the reports and logs (default: a new temporary folder)
  BENCH_AB_STATIC   1: build both as the container image does (no cgo, stripped)
EOF
}

log() { printf 'bench-ab: %s\n' "$*" >&2; }

if [[ $# -lt 1 ]]; then
  usage
  exit 2
fi
case "$1" in
  -h | --help)
    usage
    exit 0
    ;;
esac
old=$1
shift
runs=5
if [[ $# -gt 0 ]]; then
  if [[ ! "$1" =~ ^[0-9]+$ ]] || ((10#$1 < 4)); then
    printf 'bench-ab: N must be a number of runs of at least 4 (fewer can never reach p < 0.05), not %q\n' "$1" >&2
    usage
    exit 2
  fi
  runs=$((10#$1))
  shift
fi
for a in "$@"; do
  case "$a" in
    -o | --output | -o=* | --output=* | -ojson | -otext)
      log "-o is set by this script; leave it out"
      exit 2
      ;;
  esac
done

results=${BENCH_AB_RESULTS:-}
if [[ -z "$results" ]]; then
  results=$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-bench-ab-XXXXXX")
fi
mkdir -p "$results"
work=$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-bench-ab-build-XXXXXX")
worktree=""
cleanup() {
  if [[ -n "$worktree" ]]; then
    git worktree remove --force "$worktree" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# build OUT builds the current directory's driftwatch into OUT: as the
# project's scripts build it (with cgo, kustomize's Go plugin loader left
# out; a no-op for a version that does not link kustomize), or
# (BENCH_AB_STATIC=1) as the image does.
build() {
  if [[ "${BENCH_AB_STATIC:-}" == 1 ]]; then
    CGO_ENABLED=0 go build -tags kustomize_disable_go_plugin_support -trimpath -ldflags "-s -w" -o "$1" .
  else
    go build -tags kustomize_disable_go_plugin_support -o "$1" .
  fi
}

log "building this tree${BENCH_AB_STATIC:+ (static: BENCH_AB_STATIC=$BENCH_AB_STATIC)}"
build "$work/new"
if [[ -f "$old" && -x "$old" ]]; then
  cp "$old" "$work/old"
  old_name=$old
else
  rev=$(git rev-parse --verify --quiet "$old^{commit}") || {
    printf 'bench-ab: OLD %q is neither an executable file nor a git revision\n' "$old" >&2
    exit 2
  }
  old_name="$old ($(git rev-parse --short "$rev"))"
  worktree="$work/tree"
  log "building $old_name from a temporary worktree"
  git worktree add --detach "$worktree" "$rev" >/dev/null
  (cd "$worktree" && build "$work/old")
fi

# The control-plane binaries, built once (the same for both versions).
eval "$(scripts/build-binaries.sh --env)"
export DRIFTWATCH_BIN_DIR

drop_caches=0
if [[ -w /proc/sys/vm/drop_caches ]]; then
  drop_caches=1
else
  log "not root: the page cache is not dropped before each run, so the peak RSS's file-backed part (the binaries' pages) is not comparable; compare the anonymous part"
fi

log "old: $old_name; new: this tree; $runs runs each, alternating; results in $results"
for ((i = 1; i <= runs; i++)); do
  for side in old new; do
    if ((drop_caches)); then
      sync
      echo 1 >/proc/sys/vm/drop_caches
    fi
    log "run $i/$runs: $side"
    status=0
    "$work/$side" bench "$@" -o json >"$results/$side-$i.json" 2>"$results/$side-$i.log" || status=$?
    if ((status != 0)); then
      log "run $i/$runs of $side failed (exit status $status): see $results/$side-$i.log"
      exit 1
    fi
  done
done

olds=() news=()
for ((i = 1; i <= runs; i++)); do
  olds+=("$results/old-$i.json")
  news+=("$results/new-$i.json")
done
"$work/new" bench compare "${olds[@]}" -- "${news[@]}"
