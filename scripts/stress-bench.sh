#!/usr/bin/env bash
# stress-bench.sh runs `driftwatch bench` N times in a row (default 10, mode
# watch unless --mode says otherwise) and stops at the first failed run: a
# run fails when the bench exits non-zero or when its report shows a drift
# that was not repaired (a failed drift call, a missing repair, a timeout) or
# a hub that never showed everything in sync. A failed run prints why: each
# run's problem, then the objects concerned with what the hub's status said
# of them and of their cluster. With STRESS_BENCH_STRICT=1 a missed bench
# target fails the run too.
#
# It builds driftwatch once into a temporary folder, exports
# DRIFTWATCH_BIN_DIR from scripts/build-binaries.sh, and keeps each run's
# progress (run-NN.log) and JSON report (run-NN.json) in a results folder
# (STRESS_BENCH_RESULTS, default a new folder under $TMPDIR). Every run
# prints one summary line on stdout; progress goes to stderr.
#
#   scripts/stress-bench.sh                   # 10 runs of --mode watch with the bench defaults
#   scripts/stress-bench.sh 10 --mode all     # 10 runs of watch, poll and burst
#   scripts/stress-bench.sh 3 --objects 100   # 3 runs; flags after N go to the bench
set -euo pipefail

cd "$(dirname "$0")/.."

usage() {
  cat >&2 <<'EOF'
usage: scripts/stress-bench.sh [N [BENCH FLAGS...]]

Runs `driftwatch bench --mode watch -o json` N times (default 10) and stops at
the first failed run. Flags after N are passed to every bench run (see
`driftwatch bench -h`), e.g. scripts/stress-bench.sh 3 --objects 100;
--mode picks another mode (watch, poll, burst, all, scale or fleet), e.g.
scripts/stress-bench.sh 10 --mode all. -o is set by this script.

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
mode=watch
have_mode=0
for ((j = 0; j < ${#bench_args[@]}; j++)); do
  a="${bench_args[j]}"
  case "${a}" in
    -mode | --mode)
      if ((j + 1 >= ${#bench_args[@]})); then
        printf 'stress-bench: %s needs a value\n' "${a}" >&2
        usage
        exit 2
      fi
      mode="${bench_args[j + 1]}"
      have_mode=1
      ;;
    -mode=* | --mode=*)
      mode="${a#*=}"
      have_mode=1
      ;;
    -o | --o | -o=* | --o=* | -output | --output | -output=* | --output=*)
      printf 'stress-bench: %s is set by this script (-o json)\n' "${a}" >&2
      usage
      exit 2
      ;;
  esac
done
if ((!have_mode)); then
  bench_args=(--mode "${mode}" "${bench_args[@]}")
fi
strict="${STRESS_BENCH_STRICT:-0}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-stress-bench.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

log "control-plane binaries (scripts/build-binaries.sh)"
DRIFTWATCH_BIN_DIR="$(scripts/build-binaries.sh)"
export DRIFTWATCH_BIN_DIR
log "DRIFTWATCH_BIN_DIR=${DRIFTWATCH_BIN_DIR}"

# As the project builds driftwatch everywhere: kustomize's Go plugin
# loader left out (see scripts/test.sh).
log "go build -tags kustomize_disable_go_plugin_support -o ${tmp}/driftwatch ."
go build -tags kustomize_disable_go_plugin_support -o "${tmp}/driftwatch" .

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

type failure struct {
	Cluster      string `json:"cluster"`
	NodeID       string `json:"nodeID"`
	Action       string `json:"action"`
	DriftError   string `json:"driftError"`
	Seen         string `json:"seen"`
	HubStatus    string `json:"hubStatus"`
	HubReason    string `json:"hubReason"`
	LastStep     string `json:"lastStep"`
	ClusterState string `json:"clusterState"`
	ClusterError string `json:"clusterError"`
}

type run struct {
	Mode       string    `json:"mode"`
	Drifts     int       `json:"drifts"`
	Repaired   int       `json:"repaired"`
	Failed     int       `json:"failed"`
	FirstError string    `json:"firstError"`
	TimedOut   bool      `json:"timedOut"`
	SyncFailed bool      `json:"syncFailed"`
	Floor      latency   `json:"floor"`
	Detect     latency   `json:"detect"`
	Repair     latency   `json:"repair"`
	Sync       float64   `json:"syncMs"`
	Elapsed    float64   `json:"elapsedMs"`
	Failures   []failure `json:"failures"`
	// Others are the burst's second hub: the burst again while the other
	// clusters drift.
	Others *struct {
		Drifts        int       `json:"drifts"`
		Repaired      int       `json:"repaired"`
		Failed        int       `json:"failed"`
		Floor         latency   `json:"floor"`
		Repair        latency   `json:"repair"`
		BurstRepaired int       `json:"burstRepaired"`
		Failures      []failure `json:"failures"`
	} `json:"others"`
}

type report struct {
	Mode  string `json:"mode"`
	Runs  []run  `json:"runs"`
	Scale *struct {
		InitialSync float64   `json:"initialSyncMs"`
		RSS         float64   `json:"steadyRSSBytes"`
		PerObject   float64   `json:"bytesPerObject"`
		IdleCPU     float64   `json:"idleCPUPercentOfCore"`
		SyncFailed  bool      `json:"syncFailed"`
		Failures    []failure `json:"failures"`
	} `json:"scale"`
	Fleet *struct {
		ColdSync   float64   `json:"coldSyncMs"`
		RSS        float64   `json:"steadyRSSBytes"`
		IdleCPU    float64   `json:"idleCPUPercentOfCore"`
		SyncFailed bool      `json:"syncFailed"`
		Failures   []failure `json:"failures"`
	} `json:"fleet"`
	Targets []struct {
		Goal   string `json:"goal"`
		Met    bool   `json:"met"`
		Actual string `json:"actual"`
	} `json:"targets"`
}

// shown bounds the failures printed per run (the report has them all).
const shown = 10

func ms(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	default:
		return fmt.Sprintf("%.2fms", v)
	}
}

func mib(v float64) string { return fmt.Sprintf("%.0fMiB", v/(1<<20)) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// explain prints up to shown failures, one per line.
func explain(what string, fs []failure) {
	for i, f := range fs {
		if i == shown {
			fmt.Printf("    %s: ... and %d more (all of them in the run's JSON report)\n", what, len(fs)-shown)
			return
		}
		saw := "bench saw: " + dash(f.Seen)
		if f.DriftError != "" {
			saw = "drift call: " + f.DriftError
		}
		fmt.Printf("    %s: cluster %s object %s action %s; %s; hub status %s (reason %s, last step %s); cluster %s (error %s)\n",
			what, f.Cluster, f.NodeID, dash(f.Action), saw, f.HubStatus, dash(f.HubReason), dash(f.LastStep), f.ClusterState, dash(f.ClusterError))
	}
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
	var parts, why []string
	var details []func()
	for _, r := range rep.Runs {
		p := fmt.Sprintf("%s: detect p50 %s p99 %s, repair p50 %s p99 %s", r.Mode, ms(r.Detect.P50), ms(r.Detect.P99), ms(r.Repair.P50), ms(r.Repair.P99))
		if r.Floor.N > 0 {
			p += fmt.Sprintf(", floor p99 %s", ms(r.Floor.P99))
		}
		if r.Mode == "burst" {
			p += fmt.Sprintf(", all repaired in %s", ms(r.Elapsed))
		}
		p += fmt.Sprintf(", repaired %d/%d", r.Repaired, r.Drifts)
		if o := r.Others; o != nil {
			p += fmt.Sprintf("; other clusters meanwhile: repair p99 %s (floor p99 %s), repaired %d/%d", ms(o.Repair.P99), ms(o.Floor.P99), o.Repaired, o.Drifts)
		}
		parts = append(parts, p)
		var rw []string
		if r.SyncFailed {
			rw = append(rw, fmt.Sprintf("%s: the hub never showed every object in sync (%d objects not in sync)", r.Mode, len(r.Failures)))
		}
		if r.TimedOut {
			rw = append(rw, r.Mode+": timed out waiting for the repairs")
		}
		if r.Failed > 0 {
			rw = append(rw, fmt.Sprintf("%s: %d drift call(s) failed, the first: %s", r.Mode, r.Failed, r.FirstError))
		}
		if !r.SyncFailed && r.Repaired+r.Failed < r.Drifts {
			rw = append(rw, fmt.Sprintf("%s: %d drift(s) never seen repaired", r.Mode, r.Drifts-r.Repaired-r.Failed))
		}
		if o := r.Others; o != nil {
			if o.Failed > 0 {
				rw = append(rw, fmt.Sprintf("%s: %d drift call(s) on the other clusters failed", r.Mode, o.Failed))
			}
			if o.Repaired+o.Failed < o.Drifts {
				rw = append(rw, fmt.Sprintf("%s: %d drift(s) on the other clusters never seen repaired", r.Mode, o.Drifts-o.Repaired-o.Failed))
			}
			if o.BurstRepaired < r.Drifts {
				rw = append(rw, fmt.Sprintf("%s with the other clusters drifting: %d of the burst's deletes never seen repaired", r.Mode, r.Drifts-o.BurstRepaired))
			}
		}
		if len(rw) > 0 || len(r.Failures) > 0 || (r.Others != nil && len(r.Others.Failures) > 0) {
			why = append(why, rw...)
			details = append(details, func() {
				explain(r.Mode, r.Failures)
				if r.Others != nil {
					explain(r.Mode+" with the other clusters drifting", r.Others.Failures)
				}
			})
		}
	}
	if s := rep.Scale; s != nil {
		parts = append(parts, fmt.Sprintf("scale: initial sync %s, steady rss %s, %.0f B/object, idle cpu %.1f%%", ms(s.InitialSync), mib(s.RSS), s.PerObject, s.IdleCPU))
		if s.SyncFailed {
			why = append(why, fmt.Sprintf("scale: the hub never showed every object in sync (%d objects not in sync)", len(s.Failures)))
			details = append(details, func() { explain("scale", s.Failures) })
		}
	}
	if f := rep.Fleet; f != nil {
		parts = append(parts, fmt.Sprintf("fleet: cold sync %s, steady rss %s, idle cpu %.1f%%", ms(f.ColdSync), mib(f.RSS), f.IdleCPU))
		if f.SyncFailed {
			why = append(why, fmt.Sprintf("fleet: the hub never showed every cluster synced and every object in sync (%d objects not in sync)", len(f.Failures)))
			details = append(details, func() { explain("fleet sync", f.Failures) })
		}
	}
	if len(parts) == 0 {
		why = append(why, "the report has no run")
	}
	var missed []string
	for _, t := range rep.Targets {
		if !t.Met {
			missed = append(missed, fmt.Sprintf("%s (%s)", t.Goal, t.Actual))
		}
	}
	line := strings.Join(parts, " | ")
	if len(rep.Targets) > 0 {
		line += fmt.Sprintf(" | targets %d/%d met", len(rep.Targets)-len(missed), len(rep.Targets))
	}
	if strict && len(missed) > 0 {
		why = append(why, "missed: "+strings.Join(missed, "; "))
	}
	if len(why) > 0 {
		fmt.Printf("%s  FAILED: %s\n", line, strings.Join(why, "; "))
		for _, d := range details {
			d()
		}
		os.Exit(1)
	}
	fmt.Println(line)
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
  log "run ${i}/${runs}: driftwatch bench -o json ${bench_args[*]}"
  began="$(now_us)"
  status=0
  "${tmp}/driftwatch" bench -o json "${bench_args[@]}" >"${run_json}" 2>"${run_log}" || status=$?
  elapsed_us=$(($(now_us) - began))
  wall="$(printf '%d.%01ds' $((elapsed_us / 1000000)) $((elapsed_us % 1000000 / 100000)))"
  verdict=0
  figures="$("${tmp}/summarize" "${run_json}" "${strict}")" || verdict=$?
  if [[ ${status} -ne 0 ]]; then
    exited="bench exited with status ${status}"
    if [[ ${status} -eq 2 ]]; then
      exited+=" (bad command line)"
    fi
    # The report, when there is one, says why.
    figures="${exited}: ${figures}"
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
