#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s),
# one after another (go test -fuzz takes one target at a time). Crashers land
# in the package's testdata/fuzz/<Target>/, where plain `go test` replays them.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-30s}"
FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-10s}"
PKGS="${FUZZPKGS:-./pkg/... ./internal/... ./cmd/...}"

failed=()
# `go test -list` prints the matching names of each package, then "ok <pkg>".
# shellcheck disable=SC2086
while read -r pkg target; do
	echo "== $pkg $target ($FUZZTIME)"
	if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME"; then
		failed+=("$pkg $target")
	fi
done < <(go test -list '^Fuzz' $PKGS | awk '/^Fuzz/ {names[n++] = $1} /^ok / {for (i = 0; i < n; i++) print $2, names[i]; n = 0}')

if ((${#failed[@]})); then
	printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
