#!/usr/bin/env bash
# compare.sh: slidelimit against the Go rate limiters people use today, on
# accuracy (replayed on simulated time), speed (one limiter, keyed stores,
# HTTP middlewares, the Redis limiters), tail latency and memory, on this machine.
#
#   ./compare.sh           representative subset, about five minutes on
#                          2 cores (make compare)
#   ./compare.sh -full     every benchmark with -count 10, benchstat tables
#   ./compare.sh -publish  copy the plots of the last full run to docs/img/,
#                          named by the run's date (the only step that writes
#                          outside bench/out/)
#
# A run writes everything under bench/out/<mode>/: the raw go test output,
# benchstat tables, report.md (the full report) and the plots in img/.
# docs/benchmarks.md describes the protocol.
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
-publish)
	src=out/full/img
	if ! ls "$src"/*.png >/dev/null 2>&1; then
		echo "compare.sh -publish: no plots in bench/$src: run ./compare.sh -full first" >&2
		exit 1
	fi
	# Each plot is copied under the date of the run (NAME-YYYY-MM-DD-full.png),
	# so that the plots of earlier runs, which docs/benchmarks.md shows under
	# their own dates, are not overwritten.
	day=$(date -u -r out/full/bench.txt +%F)
	mkdir -p ../docs/img
	for f in "$src"/*.png; do
		cp "$f" "../docs/img/$(basename "$f" .png)-$day-full.png"
	done
	echo "copied bench/$src/*.png to docs/img/*-$day-full.png (commit them with docs/benchmarks.md)" >&2
	exit 0
	;;
*) echo "usage: $0 [-full | -publish]" >&2; exit 2 ;;
esac

if [[ $mode == full ]]; then
	count=10 benchtime=200ms cpus=1,2 http_benchtime=200ms
	keyed_small='^keys=(1000|100000)$/^order=(random|zipf|seq|random-copies)$/^path=(mixed|deny)$'
	big_stores='.*' big_orders='random|zipf|random-copies'
	lat_flags=()
else
	# The subset: keyed at 100k keys in random and Zipf order; at 1M keys
	# only ours and the target's peer (sethvargo) are timed, every store is
	# still weighed; the latency harness without the keyed stores; the HTTP
	# middlewares with a shorter -benchtime.
	count=3 benchtime=100ms cpus=2 http_benchtime=50ms
	keyed_small='^keys=100000$/^order=(random|zipf|random-copies)$/^path=mixed$'
	big_stores='^(keyed.*|sethvargo)$' big_orders='random|random-copies'
	lat_flags=(-g 2 -runs 1 -calls 262144 -nokeyed)
fi
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
lock=${BENCH_LOCK-/tmp/slidelimit-bench.lock}
locked() {
	if [[ -n $lock ]] && command -v flock >/dev/null; then flock "$lock" "$@"; else "$@"; fi
}

out=out/$mode
img=$out/img
mkdir -p "$out" "$img"
bench=$out/bench.txt
: >"$bench"
start=$SECONDS
step() { printf '== [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }

step "machine (results are in bench/$out/)"
{
	go version
	lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L1d|L2|L3)' || true
	git -C .. log -1 --format='commit %H %cd' 2>/dev/null || true
	echo "load before: $(uptime)"
} | tee "$out/machine.txt" >&2

step "build: compiling the harness and the peers (a first run also downloads their modules: a minute or more)"
go test -c -o "$out/bench.test" .
go build -o "$out/memkey" ./cmd/memkey
go build -o "$out/report" ./cmd/report
go build -o "$out/latency" ./cmd/latency

step "accuracy: every workload replayed through every limiter that takes an instant (a few seconds)"
BENCH_ACCURACY_OUT=$PWD/$out/accuracy.json go test -count=1 -run '^TestAccuracy$' ./accuracy/ >&2

# A benchmark run that fails (a fixture check, a panic) does not stop the
# others: it is recorded in failed, its output stays in bench.txt, and the
# script exits 1 after the report, naming it. (show prints the result lines;
# finding none is not a failure.)
failed=()
show() { grep -E '^Benchmark' >&2 || true; }
b() {
	if ! locked "$out/bench.test" -test.run '^$' -test.benchmem -test.count "$count" -test.benchtime "$benchtime" "$@" | tee -a "$bench" | show; then
		failed+=("bench.test $*")
	fi
}
# The keyed stores at 1k and 100k keys share a process: BENCH_ROUNDS
# repeats the whole set instead of -count repeating each benchmark back to
# back, so a change in the machine's load falls on every store alike; the
# repeats' "#NN" name suffixes are stripped so that benchstat pools them.
rounds() {
	if ! BENCH_ROUNDS=$count locked "$out/bench.test" -test.run '^$' -test.benchmem -test.count 1 -test.benchtime "$benchtime" "$@" |
		sed -E 's/#[0-9]+(-[0-9]+)?([[:space:]])/\1\2/' | tee -a "$bench" | show; then
		failed+=("bench.test (rounds) $*")
	fi
}

step "speed: one limiter, one goroutine (-cpu 1)"
b -test.bench '^BenchmarkOne$/^mode=serial$' -test.cpu 1
step "speed: one limiter, shared by every P (-cpu 2,8)"
b -test.bench '^BenchmarkOne$/^mode=parallel$' -test.cpu 2,8
step "speed: keyed stores, keys in random and Zipf order, and random with a copy of the key per call (-cpu $cpus; building 100k-key fixtures takes a few seconds)"
# The stores that allocate (ulule, httprate) in a process of their own: their
# garbage collections would otherwise run beside every other store.
BENCH_FULL=1 rounds -test.bench "^BenchmarkKeyed\$/$keyed_small/^impl=(keyed.Window|keyed-window|keyed-ring|sethvargo|throttled)(#[0-9]+)?\$" -test.cpu "$cpus"
BENCH_FULL=1 rounds -test.bench "^BenchmarkKeyed\$/$keyed_small/^impl=(ulule|httprate)(#[0-9]+)?\$" -test.cpu "$cpus"
step "speed: keyed stores at 1M keys, one process per store (-cpu $cpus; each fills 1M keys first)"
for s in $("$out/memkey" -list | grep -E "$big_stores"); do
	BENCH_FULL=1 b -test.bench "^BenchmarkKeyed\$/^keys=1000000\$/^order=($big_orders)\$/^path=mixed\$/^impl=$s\$" -test.cpu "$cpus"
done

step "speed: HTTP middlewares, one request, 1 key and 100k keys ($count rounds, each middleware in a process of its own; each builds its 100k-key fixtures)"
# Each middleware runs in a process of its own, so that what one leaves
# behind (goroutines, a heap for the collector, caches) does not slow the
# next; the rounds rotate the order, so that a change in the machine's load
# falls on every middleware alike. The list is http_test.go's httpImpls
# (TestCompareRunsEveryHTTPImpl checks it).
http_impls=(slidelimit slidelimit-nofields httprate sethvargo throttled tollbooth ulule)
for ((i = 0; i < count; i++)); do
	for ((j = 0; j < ${#http_impls[@]}; j++)); do
		im=${http_impls[(i + j) % ${#http_impls[@]}]}
		if ! BENCH_FULL=1 locked "$out/bench.test" -test.run '^$' -test.benchmem -test.count 1 -test.benchtime "$http_benchtime" \
			-test.cpu 2 -test.bench "^BenchmarkHTTP\$/^path=(admit|refuse)\$/^keys=[0-9]+\$/^impl=$im\$" | tee -a "$bench" | show; then
			failed+=("bench.test BenchmarkHTTP impl=$im")
		fi
	done
done

step "redis: the Redis limiters against go-redis/redis_rate on a local redis-server (redis/bench.sh)"
if command -v redis-server >/dev/null 2>&1; then
	# Both replay accuracy workloads in real time through the Redis limiters
	# and the peers: the quick run three where, in real time, each peer
	# passes the limit (a burst before an edge then a flood; a full bucket
	# plus its refill; weighted calls at 3x; about a minute), the full run
	# all of them (about four minutes).
	r_runs=1 r_accw=edge-burst-flood,idle-then-flood,weighted-3x
	[[ $mode == full ]] && r_runs=3 r_accw=
	raw=$PWD/$out/redis.txt # the runs, for the report's plot
	(cd ../redis && RUNS=$r_runs BENCHTIME=5000x RAW="$raw" ACCURACY=1 REDIS_ACCURACY_WORKLOADS=$r_accw locked ./bench.sh) >"$out/redis.md" || { echo "redis: bench.sh failed" >&2; failed+=("redis/bench.sh"); }
	[[ -f $raw ]] || : >"$raw"
else
	echo "redis-server not found: skipped (make redis-server installs it)" | tee "$out/redis.md" >&2
	: >"$out/redis.txt"
fi

step "tail latency: one shared limiter, quiet and beside 2 busy goroutines it starts and stops"
locked "$out/latency" "${lat_flags[@]}" -json "$out/latency.json" -img "$img" >"$out/latency.md"

step "memory per key at 1M keys, one process per store (each fills 1M keys)"
mem=$out/mem.txt
: >"$mem"
for s in $("$out/memkey" -list); do
	locked "$out/memkey" -store "$s" -keys 1000000 | tee -a "$mem" >&2
done
locked "$out/memkey" -ring | tee -a "$mem" >&2
echo "load after: $(uptime)" >>"$out/machine.txt"

step "benchstat (a first run compiles it)"
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
	echo "### Keyed stores, against sethvargo/go-limiter"
	bs -filter '.name:Keyed' -col '/impl@(sethvargo keyed.Window keyed-window keyed-ring throttled ulule httprate)' -row /keys,/order,/path,/gomaxprocs
	echo "### HTTP middlewares, against go-chi/httprate"
	bs -filter '.name:HTTP' -col '/impl@(httprate slidelimit slidelimit-nofields sethvargo throttled tollbooth ulule)' -row /path,/keys
} >"$out/benchstat.txt" 2>"$out/benchstat.err" || { cat "$out/benchstat.err" >&2; exit 1; }

step "report"
"$out/report" -accuracy "$out/accuracy.json" -bench "$bench" -mem "$mem" -latency "$out/latency.md" \
	-redis "$out/redis.md" -redis-raw "$out/redis.txt" -img "$img" -out "$out/report.md" -dir "bench/$out"
step "done in $((SECONDS - start)) s: full report bench/$out/report.md, benchstat tables bench/$out/benchstat.txt, plots bench/$img/"
if ((${#failed[@]})); then
	echo "compare.sh: ${#failed[@]} benchmark run(s) FAILED; the report lacks their figures (their output is in bench/$bench):" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
if [[ $mode == full ]]; then
	echo "To refresh the plots in docs/img/ from this run: bench/compare.sh -publish" >&2
fi
