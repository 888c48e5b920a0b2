#!/usr/bin/env bash
# Before/after benchmark: the shard-router of another git revision (BASE,
# default origin/main or HEAD~1) against the working tree's, run by
# `make bench-compare BASE=<rev>`. Both binaries run on the same seeded
# packages in alternating rounds, so that they share whatever else the
# machine is doing; the table gives each median and the ratio new/base.
# A ratio is what to read on a noisy machine, never an absolute time.
#
#   function   function mode (the streaming path), ResourceList on stdin
#   split      `split - -o DIR` with DIR on a tmpfs (BENCH_TMPFS, default
#              /dev/shm), or in TMPDIR when there is none
#   resplit    the same split again, over its own output (issue 19: at most
#              1.3x split)
#   plan       `plan - --previous DIR` against that output: every object
#              compared, none changed (issue 15 and 19: at most 1.5x split)
#
# split, resplit and plan run one after the other for each binary in each
# round, and their ratios to split are printed for each binary.
#
# Environment: BENCH_SIZES (default "10000 100000"), BENCH_CONTEXTS (64),
# BENCH_RUNS (3), BASE (a git revision), BASE_BIN (a prebuilt binary instead),
# BENCH_TAGS (build tags for the new binary: nolive builds the image's function).
# Both outputs are compared byte for byte (function mode) and as trees
# (split): a regression test of behaviour as well.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SIZES=${BENCH_SIZES:-"10000 100000"}
CONTEXTS=${BENCH_CONTEXTS:-64}
RUNS=${BENCH_RUNS:-3}
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
	echo "compare: GNU time is needed at $TIME (Debian: apt-get install -y time)" >&2
	exit 1
fi
TMPFS=${BENCH_TMPFS-/dev/shm}
if [[ -z $TMPFS || $(stat -f -c %T "$TMPFS" 2>/dev/null) != tmpfs ]]; then
	TMPFS=${TMPDIR:-/tmp}
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/shard-router-compare.XXXXXX")
OUT=$(mktemp -d "$TMPFS/shard-router-compare.XXXXXX")
trap 'rm -rf "$WORK" "$OUT"' EXIT

if [[ -n ${BASE_BIN:-} ]]; then
	cp "$BASE_BIN" "$WORK/base"
else
	BASE=${BASE:-HEAD~1}
	echo "compare: building base $BASE ($(git rev-parse --short "$BASE"))"
	mkdir "$WORK/src"
	git archive "$BASE" | tar -x -C "$WORK/src"
	(cd "$WORK/src" && CGO_ENABLED=0 go build -trimpath -o "$WORK/base" ./cmd/shard-router)
fi
echo "compare: building new (working tree)"
CGO_ENABLED=0 go build -trimpath ${BENCH_TAGS:+-tags $BENCH_TAGS} -o "$WORK/new" ./cmd/shard-router
go build -o "$WORK/genpkg" ./hack/bench/genpkg

# run_once BIN MODE INPUT TAG: prints "wall_s rss_kb cpu_s".
run_once() {
	local bin=$1 mode=$2 in=$3 tag=$4 log=$WORK/time.log
	local -a cmd
	local out=$WORK/out-$tag.yaml
	case $mode in
	function) cmd=("$WORK/$bin") ;;
	split)
		rm -rf "${OUT:?}/$tag"
		cmd=("$WORK/$bin" split - -o "$OUT/$tag" --name bench)
		out=/dev/null
		;;
	resplit)
		cmd=("$WORK/$bin" split - -o "$OUT/$tag" --name bench)
		out=/dev/null
		;;
	plan)
		cmd=("$WORK/$bin" plan - --previous "$OUT/$tag" --name bench -o json --detailed-exitcode)
		out=/dev/null
		;;
	esac
	if ! $TIME -o "$log" -f '%e %M %U %S' "${cmd[@]}" <"$in" >"$out" 2>"$WORK/stderr.log"; then
		echo "compare: $bin $mode failed:" >&2
		cat "$WORK/stderr.log" >&2
		exit 1
	fi
	tail -n1 "$log" | awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

declare -A W M C
for n in $SIZES; do
	in=$WORK/in-$n.yaml
	"$WORK/genpkg" -items "$n" -contexts "$CONTEXTS" -seed 1 >"$in"
	for group in function split; do
		modes=$group
		[[ $group == split ]] && modes="split resplit plan"
		declare -A ws ms cs
		for ((r = 0; r < RUNS; r++)); do
			for bin in base new; do
				for mode in $modes; do
					read -r w m c < <(run_once "$bin" "$mode" "$in" "$bin")
					ws[$bin,$mode]+="$w " ms[$bin,$mode]+="$m " cs[$bin,$mode]+="$c "
				done
			done
		done
		for bin in base new; do
			for mode in $modes; do
				W[$bin,$mode,$n]=$(printf '%s\n' ${ws[$bin,$mode]} | median)
				M[$bin,$mode,$n]=$(printf '%s\n' ${ms[$bin,$mode]} | median)
				C[$bin,$mode,$n]=$(printf '%s\n' ${cs[$bin,$mode]} | median)
			done
		done
		unset ws ms cs
		case $group in
		function)
			if cmp -s "$WORK/out-base.yaml" "$WORK/out-new.yaml"; then
				echo "compare: $n items: function output byte-identical"
			elif cmp -s <(sed '/^results:/,$d' "$WORK/out-base.yaml") <(sed '/^results:/,$d' "$WORK/out-new.yaml"); then
				echo "compare: $n items: function items byte-identical, results differ"
			else
				echo "compare: $n items: function output DIFFERS in its items"
			fi
			;;
		split)
			if diff -r "$OUT/base" "$OUT/new" >/dev/null; then
				echo "compare: $n items: split output identical (after split and resplit)"
			else
				echo "compare: $n items: split output DIFFERS"
			fi
			;;
		esac
	done
	rm -f "$in"
done

echo
echo "## Before/after, $CONTEXTS contexts (median of $RUNS, alternating rounds)"
echo
echo "| mode | items | base wall s | new wall s | new/base wall | base CPU s | new CPU s | new/base CPU | base RSS MB | new RSS MB | new/base RSS |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for mode in function split resplit plan; do
	for n in $SIZES; do
		echo "| $mode | $n | ${W[base,$mode,$n]} | ${W[new,$mode,$n]} | $(ratio "${W[new,$mode,$n]}" "${W[base,$mode,$n]}") |" \
			"${C[base,$mode,$n]} | ${C[new,$mode,$n]} | $(ratio "${C[new,$mode,$n]}" "${C[base,$mode,$n]}") |" \
			"$((M[base,$mode,$n] / 1024)) | $((M[new,$mode,$n] / 1024)) | $(ratio "${M[new,$mode,$n]}" "${M[base,$mode,$n]}") |"
	done
done

echo
echo "## Within each binary: resplit and plan against split (issue 19: resplit at most 1.3x, plan at most 1.5x)"
echo
echo "| binary | items | resplit/split wall | resplit/split CPU | plan/split wall | plan/split CPU |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for bin in base new; do
	for n in $SIZES; do
		echo "| $bin | $n | $(ratio "${W[$bin,resplit,$n]}" "${W[$bin,split,$n]}") | $(ratio "${C[$bin,resplit,$n]}" "${C[$bin,split,$n]}") |" \
			"$(ratio "${W[$bin,plan,$n]}" "${W[$bin,split,$n]}") | $(ratio "${C[$bin,plan,$n]}" "${C[$bin,split,$n]}") |"
	done
done
