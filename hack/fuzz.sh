#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one after another (go's fuzzer
# takes one target at a time), and prints a table of each target's
# executions and executions per second, so that a slower target shows.
#
# It fails only on a finding: an input that crashes a target or breaks one
# of its assertions, written to the package's testdata/fuzz/<Target>/ and
# failing again under plain `go test` (which replays it from then on). The
# fuzz engine can also stop with an error of its own and no input, such as
# "context deadline exceeded" at the end of a wall-time budget
# (go.dev/issue/75804); it can even write an input that only took too long
# on a starved machine (a worker gives up after 10 s on one input). Those
# are reported in the table and the log, never as a failure.
#
# Settings (environment):
#   FUZZTIME          each target's budget: an execution count such as
#                     10000x (the default; CI's) or a duration such as 5m
#   FUZZMINIMIZETIME  budget to minimize each new input (default 100x: a
#                     bounded pause, so a budget goes to executing inputs)
#   FUZZPARALLEL      fuzzing workers (default: the number of CPUs)
#   FUZZCACHE         the corpus of interesting inputs to start from and
#                     grow: "fresh" (the default: an empty one, so that
#                     every run does the same work from the seeds and
#                     testdata), or a directory to keep between runs
#   FUZZPKGS          the package directories to look in
#   FUZZTARGETS       a regexp: only the targets it matches
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-10000x}"
FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-100x}"
FUZZPARALLEL="${FUZZPARALLEL:-$(nproc 2>/dev/null || echo 2)}"
FUZZCACHE="${FUZZCACHE:-fresh}"
FUZZPKGS="${FUZZPKGS:-cmd internal pkg test/kubeapiserver}"
FUZZTARGETS="${FUZZTARGETS:-.}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache="$FUZZCACHE"
if [[ "$cache" == fresh ]]; then
	cache="$work/cache"
fi

# targets lists "dir Target" for every fuzz target, from the test files.
targets() {
	# shellcheck disable=SC2086
	grep -rl --include='*_test.go' '^func Fuzz' $FUZZPKGS | xargs -n1 dirname | sort -u |
		while read -r dir; do
			grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | grep -E "$FUZZTARGETS" |
				sed "s|^|$dir |" || true
		done
}

# stats prints "execs seconds" from go's last progress line of a log
# ("fuzz: elapsed: 1m3s, execs: 20000 (317/sec), ..."), "0 0" without one.
stats() {
	awk '/^fuzz: elapsed: .*, execs: / {
		e = $3; sub(/,$/, "", e); secs = 0
		if (match(e, /[0-9]+h/)) secs += 3600 * substr(e, RSTART, RLENGTH - 1)
		if (match(e, /[0-9]+m/)) secs += 60 * substr(e, RSTART, RLENGTH - 1)
		if (match(e, /[0-9.]+s/)) secs += substr(e, RSTART, RLENGTH - 1)
		execs = $5; sub(/,$/, "", execs)
	} END { printf "%d %d\n", execs, secs }' "$1"
}

# failsUnderGoTest reports whether plain `go test` fails on one of the inputs (testdata
# file names) of one target.
failsUnderGoTest() {
	local dir=$1 target=$2 name
	shift 2
	for name in "$@"; do
		if ! go test "./$dir" -count=1 -timeout 120s -run "^${target}\$/^${name}\$" >"$work/replay.log" 2>&1; then
			cat "$work/replay.log"
			return 0
		fi
	done
	return 1
}

declare -A built=()
rows=()
failed=0
while read -r dir target; do
	bin="$work/$(echo "$dir" | tr / _).test"
	if [[ -z "${built[$dir]:-}" ]]; then
		# One instrumented test binary per package, for all its targets.
		go test -c -vet=off -fuzz=. -o "$bin" "./$dir"
		built[$dir]=1
	fi
	corpus="$dir/testdata/fuzz/$target"
	before=$(ls "$corpus" 2>/dev/null | sort || true)
	log="$work/$target.log"
	echo "== $dir $target ($FUZZTIME, minimize $FUZZMINIMIZETIME, $FUZZPARALLEL workers)"
	status=0
	(cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$FUZZTIME" \
		-test.fuzzminimizetime="$FUZZMINIMIZETIME" -test.parallel="$FUZZPARALLEL" \
		-test.fuzzcachedir="$cache/$dir") 2>&1 | tee "$log" || status=$?
	read -r execs secs < <(stats "$log")
	# shellcheck disable=SC2207
	new=($(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null | sort)))
	result=ok
	if ((${#new[@]})); then
		if failsUnderGoTest "$dir" "$target" "${new[@]}"; then
			result="FAILED: $corpus/${new[0]}"
			failed=1
		else
			result="engine: $corpus/${new[0]} written, but go test passes on it"
		fi
	elif ((status != 0)); then
		if grep -q '^failure while testing seed corpus entry' "$log"; then
			result="FAILED: a seed"
			failed=1
		elif ((execs == 0)); then
			result="FAILED: did not fuzz"
			failed=1
		else
			result="engine: $(grep -v '^fuzz: \|^\(--- \)\?FAIL\|^exit status\|^=== ' "$log" | tail -1 | sed 's/^ *//')"
		fi
	fi
	rate=0
	((secs > 0)) && rate=$((execs / secs))
	rows+=("$(printf '%-28s %-26s %9d %6ds %8d  %s' "$dir" "$target" "$execs" "$secs" "$rate" "$result")")
done < <(targets)

echo
printf '%-28s %-26s %9s %7s %8s  %s\n' package target execs elapsed execs/s result
printf '%s\n' "${rows[@]}"
exit "$failed"
