#!/usr/bin/env bash
# bench.sh: the Redis limiters against go-redis/redis_rate on a local
# redis-server that the benchmarks start themselves (redis/internal/redistest),
# printed as markdown tables ready for docs/.
#
#   ./bench.sh            3 runs of 5000 decisions per decider and concurrency
#   RUNS=10 BENCHTIME=20000x ./bench.sh
#   MEMORY=0 ./bench.sh   skip the memory per key at 100k keys
#   ACCURACY=1 ./bench.sh also replay the accuracy workloads in real time
#                         through ours and the peers (TestAccuracyRealTime,
#                         about four minutes) and print their table;
#                         REDIS_ACCURACY_WORKLOADS=a,b replays only those
#   DECIDERS=log,window,redis_rate ./bench.sh   only these deciders
#   RAW=file ./bench.sh   also keep the runs' output there, each line after its
#                         run ("run3 BenchmarkDecide/..."), for a plot
#
# Each run is one `go test -bench` process with its own server, in which the
# deciders take turns in slices of decisions, in a shuffled order
# (BenchmarkDecide), so that within a run they share the machine's good and
# bad moments. Decisions per second are listed per run; the ratio against redis_rate at the same number
# of goroutines (for the deciders on go-redis's autopipeliner, "-ap", against
# redis_rate's on it) is taken within each run, and the table gives the
# median of those ratios, their range and how many runs were at 1 or above.
# The load average is printed before and after: the numbers mean little on a
# busy machine.
set -euo pipefail
cd "$(dirname "$0")"

runs=${RUNS:-3}
benchtime=${BENCHTIME:-5000x}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "load before: $(uptime | sed 's/.*load average: //')"
echo "redis-server: $(redis-server --version | awk '{print $3}'), $(go version | awk '{print $3}'), $(nproc) cores"
for r in $(seq "$runs"); do
	go test -run '^$' -bench 'BenchmarkDecide/' -benchtime="$benchtime" -count 1 . >"$out/run$r.txt"
done
echo "load after:  $(uptime | sed 's/.*load average: //')"
echo
if [[ -n ${RAW:-} ]]; then
	for r in $(seq "$runs"); do sed "s/^/run$r /" "$out/run$r.txt"; done >"$RAW"
fi

cat "$out"/run*.txt | awk -v runs="$runs" '
/^BenchmarkDecide\// {
	split($1, a, "/"); name = a[2]; g = a[3]; sub(/-[0-9]+$/, "", g); sub(/^g=/, "", g)
	k = name SUBSEP g
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "decisions/s") dps[k] = dps[k] " " $i
		if ($(i+1) == "p50-µs") p50[k] = p50[k] " " $i
		if ($(i+1) == "p99-µs") p99[k] = p99[k] " " $i
		if ($(i+1) == "server-µs/decision") srv[k] = srv[k] " " $i
		if ($(i+1) == "scripts/decision") scr[k] = scr[k] " " $i
	}
}
function median(s,   v, m, i, j, t) {
	m = split(s, v, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	if (m % 2) return v[(m + 1) / 2]
	return (v[m / 2] + v[m / 2 + 1]) / 2
}
# paired(s, r): the ratios s[i]/r[i] of two lists of the same runs: their
# median, their range and how many are at least 1.
function paired(s, r,   a, b, m, i, j, t, lo, hi, ge, med) {
	m = split(s, a, " "); split(r, b, " ")
	for (i = 1; i <= m; i++) { a[i] = a[i] / b[i]; if (a[i] >= 1) ge++ }
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	return sprintf("%.2fx [%.2f–%.2f], %d of %d", med, a[1], a[m], ge, m)
}
function list(s,   v, m, i, o) {
	m = split(s, v, " "); o = ""
	for (i = 1; i <= m; i++) o = o (i > 1 ? " / " : "") sprintf("%d", v[i])
	return o
}
END {
	print "| decider | goroutines | decisions/s (each run) | median | vs redis_rate: median of the runs [range], runs at 1 or above | p50 µs | p99 µs | scripts per decision | server µs per decision |"
	print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for (i = 1; i <= n; i++) {
		k = order[i]; split(k, kg, SUBSEP)
		# a decider on the autopipeliner ("-ap") against redis_rate on it
		ref = (kg[1] ~ /-ap$/ ? "redis_rate-ap" : "redis_rate") SUBSEP kg[2]
		ratio = (ref in dps) ? paired(dps[k], dps[ref]) : "-"
		printf "| %s | %s | %s | %d | %s | %d | %d | %.3f | %.1f |\n", kg[1], kg[2], list(dps[k]), median(dps[k]), ratio, median(p50[k]), median(p99[k]), median(scr[k]), median(srv[k])
	}
}'

if [[ ${MEMORY:-1} != 0 ]]; then
	echo
	go test -run '^$' -bench 'BenchmarkMemoryPerKey' -benchtime=1x -count 1 . >"$out/mem.txt"
	echo "| decider | bytes per key at 100k keys (INFO memory used_memory) |"
	echo "| --- | --- |"
	awk '/^BenchmarkMemoryPerKey\// { split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]); for (i = 3; i < NF; i++) if ($(i+1) == "bytes/key") printf "| %s | %d |\n", a[2], $i }' "$out/mem.txt"
fi

if [[ ${ACCURACY:-0} != 0 ]]; then
	echo
	echo "Accuracy, replayed in real time (limit 100 per 1s): the largest admitted count in any window of 1s over the limit;"
	echo "(admitted of what the exact log admits alone); + and − the decisions the exact log judges over and under on the"
	echo "limiter's own history; for two-counter limiters, the same against their formula."
	[[ -n ${REDIS_ACCURACY_WORKLOADS:-} ]] && echo "Workloads: ${REDIS_ACCURACY_WORKLOADS//,/, } (bench/compare.sh -full replays all of them)."
	echo
	REDIS_ACCURACY="$out/accuracy.md" go test -count=1 -run '^TestAccuracyRealTime$' . >"$out/accuracy.log" 2>&1 || { cat "$out/accuracy.log" >&2; exit 1; }
	cat "$out/accuracy.md"
fi
