#!/usr/bin/env bash
# run.sh compares Vigil's bus with Cordis on the same workloads: it runs the
# Go benchmarks of bus/bench_test.go and bench.mjs (Cordis 4 and 3 from npm,
# pinned by package-lock.json) and prints, per workload and Cordis version,
#
#   WORKLOAD: vigil X ns/op, cordis@VERSION Y ns/op, ratio Y/X
#
# Progress and tool output go to stderr; stdout carries only those lines.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

(cd "$here" && npm ci --no-audit --no-fund --loglevel=error) >&2

echo "running go benchmarks..." >&2
goout=$(cd "$repo" && go test -run '^$' -bench '^Benchmark(Emit|Waterfall|DispatchVeto)$' -benchmem ./bus/)
echo "$goout" >&2

echo "running cordis benchmarks..." >&2
jsout=$(cd "$here" && node bench.mjs)
echo "$jsout" >&2

# Go lines look like "BenchmarkEmit/listeners=10-8  N  33.8 ns/op ...": the
# workload is the name without "Benchmark" and the -GOMAXPROCS suffix.
declare -A vigil
while read -r name _ ns unit _; do
	[[ $name == Benchmark* && $unit == ns/op ]] || continue
	name=${name#Benchmark}
	name=${name%-[0-9]*}
	vigil[$name]=$ns
done <<<"$goout"

while IFS=$'\t' read -r version workload ns why; do
	x=${vigil[$workload]:-}
	if [[ -z $x ]]; then
		echo "no Go result for $workload" >&2
		exit 1
	fi
	if [[ $ns == - ]]; then
		echo "$workload: vigil $x ns/op, $version skipped ($why)"
		continue
	fi
	awk -v w="$workload" -v x="$x" -v v="$version" -v y="$ns" \
		'BEGIN { printf "%s: vigil %s ns/op, %s %s ns/op, ratio %.1f\n", w, x, v, y, y / x }'
done <<<"$jsout"
