#!/usr/bin/env bash
# compare.sh: slidelimit against the Go rate limiters people use today, on
# accuracy (replayed on simulated time) and speed, on this machine.
#
#   ./compare.sh          representative subset, a few minutes on 2 cores
#                         (make compare)
#   ./compare.sh -full    every benchmark with -count 10, benchstat tables
#
# Results go to out/<mode>/ (raw go test output, benchstat tables, report.md)
# and the plots to ../docs/img/. docs/benchmarks.md describes the protocol.
#
# Benchmark runs hold the lock file $BENCH_LOCK (default
# /tmp/slidelimit-bench.lock) so that two runs on one machine do not measure
# each other; set BENCH_LOCK= to run without it.
set -euo pipefail
cd "$(dirname "$0")"

mode=quick
case "${1:-}" in
"") ;;
-full) mode=full ;;
*) echo "usage: $0 [-full]" >&2; exit 2 ;;
esac

if [[ $mode == full ]]; then
	count=10 benchtime=200ms keyed_counts='^keys=(1|1000|100000)$' big_stores='.*'
else
	# The subset: keyed at 1k and 100k keys; at 1M keys only ours and the
	# target's peer (sethvargo) are timed, every store is still weighed.
	count=3 benchtime=100ms keyed_counts='^keys=(1000|100000)$' big_stores='^(keyed-.*|sethvargo)$'
fi
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
lock=${BENCH_LOCK-/tmp/slidelimit-bench.lock}
locked() {
	if [[ -n $lock ]] && command -v flock >/dev/null; then flock "$lock" "$@"; else "$@"; fi
}

out=out/$mode
img=../docs/img
mkdir -p "$out" "$img"
bench=$out/bench.txt
: >"$bench"
start=$SECONDS
step() { printf '== [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }

step "machine"
{
	go version
	lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L1d|L2|L3)' || true
	git -C .. log -1 --format='commit %H %cd' 2>/dev/null || true
} | tee "$out/machine.txt" >&2

step "build"
go test -c -o "$out/bench.test" .
go build -o "$out/memkey" ./cmd/memkey
go build -o "$out/report" ./cmd/report

step "accuracy: every workload through every limiter that takes an instant"
BENCH_ACCURACY_OUT=$PWD/$out/accuracy.json go test -count=1 -run '^TestAccuracy$' ./accuracy/ >&2

b() { locked "$out/bench.test" -test.run '^$' -test.benchmem -test.count "$count" -test.benchtime "$benchtime" "$@" | tee -a "$bench" | grep -E '^Benchmark' >&2 || true; }

step "one limiter, one goroutine (-cpu 1)"
b -test.bench '^BenchmarkOne$/^mode=serial$' -test.cpu 1
step "one limiter, shared by every P (-cpu 2,8)"
b -test.bench '^BenchmarkOne$/^mode=parallel$' -test.cpu 2,8
step "keyed stores (-cpu 2)"
BENCH_FULL=1 b -test.bench "^BenchmarkKeyed\$/$keyed_counts" -test.cpu 2
step "keyed stores at 1M keys, one process per store (-cpu 2)"
for s in $("$out/memkey" -list | grep -E "$big_stores"); do
	for p in mixed deny; do
		BENCH_FULL=1 b -test.bench "^BenchmarkKeyed\$/^keys=1000000\$/^path=$p\$/^impl=$s\$" -test.cpu 2
	done
done

step "memory per key at 1M keys, one process per store"
mem=$out/mem.txt
: >"$mem"
for s in $("$out/memkey" -list); do
	locked "$out/memkey" -store "$s" -keys 1000000 | tee -a "$mem" >&2
done
locked "$out/memkey" -ring | tee -a "$mem" >&2

step "benchstat"
bs() { go run "$BENCHSTAT" "$@" "$bench"; }
{
	echo "### One goroutine, against the floor (clock read + CAS)"
	bs -filter '/mode:serial' -col '/impl@(floor ring window mutexlog mutexwindow)' -row /path
	echo "### One goroutine, against x/time/rate"
	bs -filter '/mode:serial' -col '/impl@(xrate ring window multi juju russellluo uber)' -row /path
	echo "### Every P on one limiter, against x/time/rate"
	bs -filter '/mode:parallel' -col '/impl@(xrate ring window multi mutexlog mutexwindow juju russellluo uber)' -row /path,/gomaxprocs
	echo "### Every P on one limiter, against the mutex-guarded twins"
	bs -filter '/mode:parallel' -col '/impl@(mutexlog ring)' -row /path,/gomaxprocs
	bs -filter '/mode:parallel' -col '/impl@(mutexwindow window)' -row /path,/gomaxprocs
	echo "### Keyed stores, -cpu 2, against sethvargo/go-limiter"
	bs -filter '.name:Keyed' -col '/impl@(sethvargo keyed-window keyed-ring throttled ulule httprate)' -row /keys,/path
} >"$out/benchstat.txt" 2>"$out/benchstat.err" || { cat "$out/benchstat.err" >&2; exit 1; }

step "report"
"$out/report" -accuracy "$out/accuracy.json" -bench "$bench" -mem "$mem" -img "$img" | tee "$out/report.md"
step "done: $out/report.md, $out/benchstat.txt, plots in docs/img/"
