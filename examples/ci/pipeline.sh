#!/usr/bin/env bash
# The CI recipe for a sharded kpt package: render, plan, apply.
#
#   examples/ci/pipeline.sh PKG OUT
#
# 1. kpt fn render PKG --allow-exec: the package's pipeline runs shard-router
#    (skip with RENDER=0 when PKG is rendered already).
# 2. shard-router plan PKG --previous OUT -o markdown --diff: what each
#    cluster will gain, change and lose, written to $PLAN_MD (post it as the
#    pull-request comment). Exit 1 (refused) stops here; exit 0 (no changes)
#    stops here too unless APPLY_UNCHANGED=1. PLAN_ONLY=1 stops after it
#    (pull requests).
# 3. shard-router apply PKG --out OUT: split and apply every context with
#    kpt's live library, $PARALLEL at a time; a move hands off (the new
#    cluster first, the old one prunes once the new copies are Current);
#    OUT/<ctx> is replaced only once that context applied and reconciled,
#    so a rerun retries exactly what failed. Progress on stderr, the report
#    on stdout. A refusal stops before anything is applied; exits 1 if any
#    context failed.
#
# Environment:
#   SHARD_ROUTER  shard-router binary (default: shard-router on PATH)
#   KPT           kpt binary, for the render (default: kpt on PATH)
#   PLAN_MD       where the markdown plan goes (default: OUT.plan.md)
#   PARALLEL      contexts applied at once (default 4)
#   APPLY_FLAGS   more flags for shard-router apply, e.g.
#                 "--reconcile-timeout 10m" or "-o json" (KUBECONFIG, or
#                 --kubeconfig, chooses the kubeconfig)
#   RENDER=0, PLAN_ONLY=1, APPLY_UNCHANGED=1: see above
set -euo pipefail

if (($# != 2)); then
	echo "usage: $0 PKG OUT" >&2
	exit 2
fi
PKG=$1 OUT=$2
SR=${SHARD_ROUTER:-shard-router}
KPT=${KPT:-kpt}
PLAN_MD=${PLAN_MD:-$OUT.plan.md}
PARALLEL=${PARALLEL:-4}
read -r -a apply_flags <<<"${APPLY_FLAGS:-}"

say() { echo "pipeline: $*" >&2; }

if [[ ${RENDER:-1} != 0 ]]; then
	say "render $PKG"
	if ! "$KPT" fn render "$PKG" --allow-exec >&2; then
		say "render failed: nothing applied"
		exit 1
	fi
fi

say "plan -> $PLAN_MD"
rc=0
"$SR" plan "$PKG" --previous "$OUT" -o markdown --diff --detailed-exitcode >"$PLAN_MD" || rc=$?
case $rc in
0)
	say "plan: no changes"
	if [[ ${APPLY_UNCHANGED:-} != 1 ]]; then
		exit 0
	fi
	;;
2) say "plan: changes (see $PLAN_MD)" ;;
*)
	say "plan refused the change (exit $rc, see $PLAN_MD): nothing applied"
	exit 1
	;;
esac
if [[ ${PLAN_ONLY:-} == 1 ]]; then
	exit 0
fi

say "apply -> $OUT"
if ! "$SR" apply "$PKG" --out "$OUT" --parallel "$PARALLEL" "${apply_flags[@]}"; then
	say "apply failed: see the report; a rerun retries what failed"
	exit 1
fi
say "applied every context"
