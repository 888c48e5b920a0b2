#!/bin/sh
# house.sh draws the house (issue 19): per package under pkg/ and internal/,
# its non-test Go lines and its imports of the project's packages; then the
# functions of 60 lines or more.
set -eu
cd "$(dirname "$0")/.."
mod=$(go list -m)
printf '%-28s %6s  %s\n' PACKAGE LINES IMPORTS
for p in $(go list ./pkg/... ./internal/...); do
	files=$(go list -f '{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}' "$p")
	lines=$(cat $files | wc -l)
	imports=$(go list -f '{{join .Imports "\n"}}' "$p" | sed -n "s#^$mod/##p" | tr '\n' ' ')
	printf '%-28s %6s  %s\n' "${p#"$mod"/}" "$lines" "$imports"
done
echo
echo "functions of 60 lines or more:"
go run ./hack/funclen -min 60 cmd internal pkg | sort -rn
