#!/usr/bin/env bash
# Whole-process benchmark of function mode (issue 6), run by `make bench`.
#
# Generates seeded packages (internal/gen) into a temporary directory, runs each
# program on them with stdin from the file and stdout to /dev/null, and
# prints wall time and peak RSS (GNU time's %e and %M) with the ratios to
# the kyaml no-op function (tools/kpt/kyaml-noop, the floor of every kyaml
# fn/framework function):
#   kyaml-noop            framework.Execute with a processor that does nothing
#   shard-router          function mode (the streaming path)
#   shard-router-ref      function mode forced onto the kyaml framework path
#                         (SHARD_ROUTER_REFERENCE=1)
#   shard-router-split    `shard-router split - -o DIR`, DIR in TMPDIR
#   split-tmpfs           the same with DIR on a tmpfs (BENCH_TMPFS, default
#                         /dev/shm when it is one): split without the cost of
#                         creating files on a disk
#   resplit-tmpfs         the same split again, over split-tmpfs's output
#                         (the previous split is read, every file kept):
#                         issue 19 wants at most 1.3x split-tmpfs
#   files-floor           `cp -r` of split's output to another directory
#                         beside it: what creating those files costs here
#   plan-tmpfs            `shard-router plan - --previous DIR` against
#                         split-tmpfs's output (every object compared, none
#                         changed; --detailed-exitcode makes a change fail
#                         the run): issues 15 and 19 want at most 1.5x
#                         split-tmpfs
# Then the context-count check (2 vs 1,000 contexts) and the 10k -> 100k
# scaling. Each measurement is the median of BENCH_RUNS runs, or one run when
# the first takes longer than BENCH_SLOW seconds. The streaming output is
# compared with the reference output byte for byte at every size.
#
# Environment:
#   BENCH_SIZES     item counts (default "10000 100000")
#   BENCH_CONTEXTS  contexts for the main table (default 64)
#   BENCH_CTX_ITEMS items for the context-count check (default 100000: the
#                   per-item cost; the config and the per-context results
#                   are a fixed cost that small packages do not amortize)
#   BENCH_RUNS      runs per measurement (default 3)
#   BENCH_SLOW      seconds above which one run is enough (default 20)
#   BENCH_TMPFS     a tmpfs directory for split-tmpfs ("" to skip it)
#   BENCH_SKIP      programs to skip, e.g. "shard-router-ref" (it needs
#                   ~15 GB at 100k items, like the no-op)
#   KYAML_NOOP      the no-op function (default .tools/bin/kyaml-noop)
#   BENCH_KEEP=1    keep the temporary directory
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SIZES=${BENCH_SIZES:-"10000 100000"}
CONTEXTS=${BENCH_CONTEXTS:-64}
CTX_ITEMS=${BENCH_CTX_ITEMS:-100000}
RUNS=${BENCH_RUNS:-3}
SLOW=${BENCH_SLOW:-20}
SKIP=${BENCH_SKIP:-}
NOOP=${KYAML_NOOP:-$ROOT/.tools/bin/kyaml-noop}
if [[ -z ${BENCH_TMPFS+x} ]]; then
	BENCH_TMPFS=
	if [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs && -w /dev/shm ]]; then
		BENCH_TMPFS=/dev/shm
	fi
fi
TIME=/usr/bin/time

if [[ ! -x $TIME ]] || ! $TIME -f '%e %M' true >/dev/null 2>&1; then
	echo "bench: GNU time is needed at $TIME (Debian: apt-get install -y time)" >&2
	exit 1
fi
if [[ ! -x $NOOP ]]; then
	echo "bench: $NOOP is missing: run 'make tools-kpt' (or set KYAML_NOOP)" >&2
	exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/shard-router-bench.XXXXXX")
SHM=
if [[ -n $BENCH_TMPFS ]]; then
	SHM=$(mktemp -d "$BENCH_TMPFS/shard-router-bench.XXXXXX")
fi
if [[ ${BENCH_KEEP:-} != 1 ]]; then
	trap 'rm -rf "$WORK" ${SHM:+"$SHM"}' EXIT
else
	echo "bench: keeping $WORK"
fi

echo "bench: building into $WORK"
CGO_ENABLED=0 go build -trimpath -o "$WORK/shard-router" ./cmd/shard-router
go build -o "$WORK/genpkg" ./hack/bench/genpkg
SR=$WORK/shard-router
HAVE_SPLIT=0
if "$SR" split --help >/dev/null 2>&1; then
	HAVE_SPLIT=1
fi

# run_once PROGRAM INPUT OUTPUT: prints "wall_s rss_kb cpu_s" (cpu_s is user
# plus system time: less disturbed than wall time by other load on the
# machine, but it counts both cores).
run_once() {
	local prog=$1 in=$2 out=$3 log=$WORK/time.log
	local -a cmd
	case $prog in
	kyaml-noop) cmd=("$NOOP") ;;
	shard-router) cmd=("$SR") ;;
	shard-router-ref) cmd=(env SHARD_ROUTER_REFERENCE=1 "$SR") ;;
	shard-router-split)
		rm -rf "$WORK/split"
		cmd=("$SR" split - -o "$WORK/split" --name bench)
		out=/dev/null
		;;
	split-tmpfs)
		rm -rf "$SHM/split"
		cmd=("$SR" split - -o "$SHM/split" --name bench)
		out=/dev/null
		;;
	resplit-tmpfs)
		cmd=("$SR" split - -o "$SHM/split" --name bench)
		out=/dev/null
		;;
	plan-tmpfs)
		cmd=("$SR" plan - --previous "$SHM/split" --name bench -o json --detailed-exitcode)
		out=/dev/null
		;;
	files-floor)
		rm -rf "$WORK/split-copy"
		cmd=(cp -r "$WORK/split" "$WORK/split-copy")
		in=/dev/null out=/dev/null
		;;
	esac
	if ! $TIME -o "$log" -f '%e %M %U %S' "${cmd[@]}" <"$in" >"$out" 2>"$WORK/stderr.log"; then
		echo "bench: $prog failed on $in:" >&2
		cat "$WORK/stderr.log" "$log" >&2
		exit 1
	fi
	tail -n1 "$log" | awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# measure INPUT PROGRAM...: runs the programs in rounds (one run of each per
# round, so that they share whatever else the machine is doing) and sets
# WALL[program], RSS[program] and CPU[program] to the medians. A program slower than SLOW
# seconds runs in the first round only.
measure() {
	local in=$1 p r round
	shift
	declare -gA WALL RSS CPU
	declare -A walls rsss cpus
	for ((round = 0; round < RUNS; round++)); do
		for p in "$@"; do
			if ((round > 0)) && ! awk -v w="${WALL[$p]}" -v s="$SLOW" 'BEGIN { exit !(w < s) }'; then
				continue
			fi
			out=/dev/null
			if ((round == 0)); then
				case $p in
				shard-router) out=$WORK/out-stream.yaml ;;
				shard-router-ref) out=$WORK/out-ref.yaml ;;
				esac
			fi
			read -r w m c < <(run_once "$p" "$in" "$out")
			walls[$p]+="$w "
			rsss[$p]+="$m "
			cpus[$p]+="$c "
			WALL[$p]=$(printf '%s\n' ${walls[$p]} | median)
			RSS[$p]=$(printf '%s\n' ${rsss[$p]} | median)
			CPU[$p]=$(printf '%s\n' ${cpus[$p]} | median)
		done
	done
}

skipped() { [[ " $SKIP " == *" $1 "* ]]; }

declare -A TWALL TRSS TCPU
PROGRAMS=(kyaml-noop shard-router shard-router-ref)
if ((HAVE_SPLIT)); then
	PROGRAMS+=(shard-router-split files-floor)
	if [[ -n $SHM ]]; then
		PROGRAMS+=(split-tmpfs resplit-tmpfs) # resplit after split-tmpfs, over its output
		if "$SR" plan --help >/dev/null 2>&1; then
			PROGRAMS+=(plan-tmpfs) # after split-tmpfs, whose output it reads
		fi
	fi
else
	echo "bench: shard-router has no split command yet: skipping it"
fi
RUNNING=()
for p in "${PROGRAMS[@]}"; do
	skipped "$p" || RUNNING+=("$p")
done

for n in $SIZES; do
	in=$WORK/in-$n-$CONTEXTS.yaml
	"$WORK/genpkg" -items "$n" -contexts "$CONTEXTS" -seed 1 >"$in"
	echo "bench: $n items, $CONTEXTS contexts: $(du -m "$in" | cut -f1) MB"
	unset WALL RSS CPU
	measure "$in" "${RUNNING[@]}"
	for p in "${RUNNING[@]}"; do
		TWALL[$p,$n]=${WALL[$p]}
		TRSS[$p,$n]=${RSS[$p]}
		TCPU[$p,$n]=${CPU[$p]}
		echo "bench:   $p: ${WALL[$p]} s, ${CPU[$p]} s CPU, $((RSS[$p] / 1024)) MB"
	done
	if [[ -s $WORK/out-ref.yaml ]]; then
		if cmp -s "$WORK/out-stream.yaml" "$WORK/out-ref.yaml"; then
			echo "bench:   streaming output is byte-identical to the reference output"
		else
			echo "bench:   ERROR: streaming output differs from the reference output" >&2
			exit 1
		fi
	fi
	if [[ -d $WORK/split && -n $SHM && -d $SHM/split ]]; then
		if diff -r "$WORK/split" "$SHM/split" >/dev/null; then
			echo "bench:   split wrote the same files on disk and on tmpfs"
		else
			echo "bench:   ERROR: split's output differs between runs" >&2
			exit 1
		fi
	fi
	if [[ -d $WORK/split ]]; then
		echo "bench:   split wrote $(find "$WORK/split" -type f | wc -l) files, $(du -sm --apparent-size "$WORK/split" | cut -f1) MB"
	fi
	rm -rf "$WORK/out-stream.yaml" "$WORK/out-ref.yaml" "$in" "$WORK/split" "$WORK/split-copy" ${SHM:+"$SHM/split"}
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

echo
echo "## Function mode, $CONTEXTS contexts (median of $RUNS; one run when slower than ${SLOW}s)"
echo
printf '| %-18s | %7s | %8s | %8s | %8s | %9s | %8s | %8s |\n' program items wall_s cpu_s rss_MB wall/noop cpu/noop rss/noop
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "--------------------" "---------" "----------" "----------" "----------" "-----------" "----------" "----------"
for n in $SIZES; do
	for p in "${RUNNING[@]}"; do
		printf '| %-18s | %7s | %8s | %8s | %8s | %9s | %8s | %8s |\n' "$p" "$n" "${TWALL[$p,$n]}" "${TCPU[$p,$n]}" "$((TRSS[$p,$n] / 1024))" \
			"$(ratio "${TWALL[$p,$n]}" "${TWALL[kyaml-noop,$n]:-0}")" "$(ratio "${TCPU[$p,$n]}" "${TCPU[kyaml-noop,$n]:-0}")" \
			"$(ratio "${TRSS[$p,$n]}" "${TRSS[kyaml-noop,$n]:-0}")"
	done
done

if ((HAVE_SPLIT)); then
	echo
	echo "## split against function mode (wall time ratios)"
	echo
	for n in $SIZES; do
		fn=${TWALL[shard-router,$n]:-0}
		line="- $n items: split $(ratio "${TWALL[shard-router-split,$n]:-0}" "$fn")x"
		if [[ -n ${TWALL[files-floor,$n]:-} ]]; then
			line+=", creating the same files alone (cp -r) $(ratio "${TWALL[files-floor,$n]}" "$fn")x"
		fi
		if [[ -n ${TWALL[split-tmpfs,$n]:-} ]]; then
			line+=", split to tmpfs $(ratio "${TWALL[split-tmpfs,$n]}" "$fn")x"
		fi
		if [[ -n ${TWALL[resplit-tmpfs,$n]:-} && -n ${TWALL[split-tmpfs,$n]:-} ]]; then
			line+=", re-split $(ratio "${TWALL[resplit-tmpfs,$n]}" "${TWALL[split-tmpfs,$n]}")x split to tmpfs (CPU $(ratio "${TCPU[resplit-tmpfs,$n]}" "${TCPU[split-tmpfs,$n]}")x)"
		fi
		if [[ -n ${TWALL[plan-tmpfs,$n]:-} && -n ${TWALL[split-tmpfs,$n]:-} ]]; then
			line+=", plan $(ratio "${TWALL[plan-tmpfs,$n]}" "${TWALL[split-tmpfs,$n]}")x split to tmpfs (RSS $(ratio "${TRSS[plan-tmpfs,$n]}" "${TRSS[split-tmpfs,$n]}")x)"
		fi
		echo "$line"
	done
fi

set -- $SIZES
if (($# >= 2)); then
	lo=$1 hi=${!#}
	echo
	echo "## Scaling, $lo -> $hi items (time ratio; linear is $(ratio "$hi" "$lo")x)"
	echo
	for p in "${RUNNING[@]}"; do
		echo "- $p: $(ratio "${TWALL[$p,$hi]}" "${TWALL[$p,$lo]}")x wall, $(ratio "${TCPU[$p,$hi]}" "${TCPU[$p,$lo]}")x CPU"
	done
fi

echo
echo "## Context count, $CTX_ITEMS items: shard-router with 2 and 1000 contexts"
echo
in2=$WORK/in-$CTX_ITEMS-2.yaml
in1000=$WORK/in-$CTX_ITEMS-1000.yaml
"$WORK/genpkg" -items "$CTX_ITEMS" -contexts 2 -seed 1 >"$in2"
"$WORK/genpkg" -items "$CTX_ITEMS" -contexts 1000 -seed 1 >"$in1000"
declare -A CW CR CC
for ((round = 0; round < RUNS; round++)); do # alternate, to share the machine's load
	for k in 2 1000; do
		in=$WORK/in-$CTX_ITEMS-$k.yaml
		read -r w m c < <(run_once shard-router "$in" /dev/null)
		CW[$k]+="$w "
		CR[$k]+="$m "
		CC[$k]+="$c "
	done
done
for k in 2 1000; do
	WALL[ctx,$k]=$(printf '%s\n' ${CW[$k]} | median)
	CPU[ctx,$k]=$(printf '%s\n' ${CC[$k]} | median)
	echo "- $k contexts: ${WALL[ctx,$k]} s, ${CPU[ctx,$k]} s CPU, $(($(printf '%s\n' ${CR[$k]} | median) / 1024)) MB"
done
rm -f "$in2" "$in1000"
echo "- 1000/2: $(ratio "${WALL[ctx,1000]}" "${WALL[ctx,2]}")x wall, $(ratio "${CPU[ctx,1000]}" "${CPU[ctx,2]}")x CPU"
