#!/usr/bin/env bash
# stress-bench.sh runs `driftwatch bench --mode watch` N times in a row
# (default 10) and stops at the first failed run: a run fails when the bench
# exits non-zero or when its report shows a drift that was not repaired (a
# failed drift call, a missing repair, a timeout). With
# STRESS_BENCH_STRICT=1 a missed bench target fails the run too.
#
# It builds driftwatch once into a temporary folder, exports
# DRIFTWATCH_BIN_DIR from scripts/build-binaries.sh, and keeps each run's
# progress (run-NN.log) and JSON report (run-NN.json) in a results folder
# (STRESS_BENCH_RESULTS, default a new folder under $TMPDIR). Every run
# prints one summary line on stdout; progress goes to stderr.
#
#   scripts/stress-bench.sh                  # 10 runs with the bench defaults
#   scripts/stress-bench.sh 3 --objects 100  # 3 runs; flags after N go to the bench
set -euo pipefail

cd "$(dirname "$0")/.."

usage() {
  cat >&2 <<'EOF'
usage: scripts/stress-bench.sh [N [BENCH FLAGS...]]

Runs `driftwatch bench --mode watch -o json` N times (default 10) and stops at
the first failed run. Flags after N are passed to every bench run (see
`driftwatch bench -h`), e.g. scripts/stress-bench.sh 3 --objects 100.
--mode and -o are set by this script.

Environment:
  STRESS_BENCH_RESULTS  folder for the per-run logs and reports (default: a new temporary folder)
  STRESS_BENCH_STRICT   1: a missed bench target fails the run too
EOF
}

log() { printf 'stress-bench: %s\n' "$*" >&2; }

runs=10
if [[ $# -gt 0 ]]; then
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
  esac
  if [[ ! "$1" =~ ^[0-9]+$ ]] || ((10#$1 < 1)); then
    printf 'stress-bench: N must be a positive number of runs, not %q\n' "$1" >&2
    usage
    exit 2
  fi
  runs=$((10#$1))
  shift
fi
bench_args=("$@")
for a in "${bench_args[@]}"; do
  case "${a}" in
    -mode | --mode | -mode=* | --mode=* | -o | --o | -o=* | --o=*)
      printf 'stress-bench: %s is set by this script (--mode watch -o json)\n' "${a}" >&2
      usage
      exit 2
      ;;
  esac
done
strict="${STRESS_BENCH_STRICT:-0}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-stress-bench.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

log "control-plane binaries (scripts/build-binaries.sh)"
DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh)"
export DRIFTWATCH_BIN_DIR
log "DRIFTWATCH_BIN_DIR=${DRIFTWATCH_BIN_DIR}"

log "go build -o ${tmp}/driftwatch ."
go build -o "${tmp}/driftwatch" .

# summarize reads one bench report and prints its key figures on one line;
# it exits 1 (after the figures and the reason) when the run is a failure.
cat >"${tmp}/summarize.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
}

type report struct {
	Runs []struct {
		Mode       string  `json:"mode"`
		Drifts     int     `json:"drifts"`
		Repaired   int     `json:"repaired"`
		Failed     int     `json:"failed"`
		FirstError string  `json:"firstError"`
		TimedOut   bool    `json:"timedOut"`
		Floor      latency `json:"floor"`
		Detect     latency `json:"detect"`
		Repair     latency `json:"repair"`
	} `json:"runs"`
	Targets []struct {
		Goal   string `json:"goal"`
		Met    bool   `json:"met"`
		Actual string `json:"actual"`
	} `json:"targets"`
}

func ms(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fms", v)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: summarize REPORT.json STRICT")
		os.Exit(2)
	}
	strict := os.Args[2] == "1"
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Printf("no report: %v\n", err)
		os.Exit(1)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		fmt.Printf("unreadable report: %v\n", err)
		os.Exit(1)
	}
	i := -1
	for j, r := range rep.Runs {
		if r.Mode == "watch" {
			i = j
		}
	}
	if i < 0 {
		fmt.Println("the report has no watch run")
		os.Exit(1)
	}
	r := rep.Runs[i]
	var line strings.Builder
	fmt.Fprintf(&line, "detect p50 %s p99 %s  repair p50 %s p99 %s", ms(r.Detect.P50), ms(r.Detect.P99), ms(r.Repair.P50), ms(r.Repair.P99))
	if r.Floor.N > 0 {
		fmt.Fprintf(&line, "  floor p99 %s", ms(r.Floor.P99))
	}
	fmt.Fprintf(&line, "  repaired %d/%d", r.Repaired, r.Drifts)
	var missed []string
	for _, t := range rep.Targets {
		if !t.Met {
			missed = append(missed, fmt.Sprintf("%s (%s)", t.Goal, t.Actual))
		}
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintf(&line, "  targets %d/%d met", len(rep.Targets)-len(missed), len(rep.Targets))
	}
	var why []string
	if r.TimedOut {
		why = append(why, "timed out waiting for the repairs")
	}
	if r.Failed > 0 {
		why = append(why, fmt.Sprintf("%d drift call(s) failed, the first: %s", r.Failed, r.FirstError))
	}
	if r.Repaired+r.Failed < r.Drifts {
		why = append(why, fmt.Sprintf("%d drift(s) never seen repaired", r.Drifts-r.Repaired-r.Failed))
	}
	if strict && len(missed) > 0 {
		why = append(why, "missed: "+strings.Join(missed, "; "))
	}
	if len(why) > 0 {
		fmt.Printf("%s  FAILED: %s\n", line.String(), strings.Join(why, "; "))
		os.Exit(1)
	}
	fmt.Println(line.String())
}
EOF
(cd "${tmp}" && GOFLAGS='' GOWORK=off go build -o summarize ./summarize.go)

results="${STRESS_BENCH_RESULTS:-}"
if [[ -z "${results}" ]]; then
  results="$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-stress-bench-results.$(date +%Y%m%d-%H%M%S).XXXX")"
fi
mkdir -p "${results}"
log "results (run-NN.log: progress, run-NN.json: report) in ${results}"

# now_us prints the wall clock in microseconds.
now_us() { printf '%s' "${EPOCHREALTIME//[.,]/}"; }

width=${#runs}
for ((i = 1; i <= runs; i++)); do
  n="$(printf '%0*d' "${width}" "${i}")"
  run_log="${results}/run-${n}.log"
  run_json="${results}/run-${n}.json"
  log "run ${i}/${runs}: driftwatch bench --mode watch -o json ${bench_args[*]}"
  began="$(now_us)"
  status=0
  "${tmp}/driftwatch" bench --mode watch -o json "${bench_args[@]}" >"${run_json}" 2>"${run_log}" || status=$?
  elapsed_us=$(($(now_us) - began))
  wall="$(printf '%d.%01ds' $((elapsed_us / 1000000)) $((elapsed_us % 1000000 / 100000)))"
  verdict=0
  figures="$("${tmp}/summarize" "${run_json}" "${strict}")" || verdict=$?
  if [[ ${status} -ne 0 ]]; then
    figures="bench exited with status ${status}"
    if [[ ${status} -eq 2 ]]; then
      figures+=" (bad command line)"
    fi
  fi
  if [[ ${status} -eq 0 && ${verdict} -eq 0 ]]; then
    printf 'run %d/%d  pass  %s  %s\n' "${i}" "${runs}" "${wall}" "${figures}"
    continue
  fi
  printf 'run %d/%d  FAIL  %s  %s\n' "${i}" "${runs}" "${wall}" "${figures}"
  printf '\nthe last 40 lines of %s:\n' "${run_log}" >&2
  tail -n 40 "${run_log}" >&2
  printf 'stress-bench: %d/%d passed; run %d failed (logs in %s)\n' "$((i - 1))" "${runs}" "${i}" "${results}"
  exit 1
done
log "results in ${results}"
printf 'stress-bench: %d/%d passed\n' "${runs}" "${runs}"
