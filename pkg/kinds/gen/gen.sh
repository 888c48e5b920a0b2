#!/bin/sh
# gen.sh regenerates ../zz_generated_table.go from the discovery documents
# checked in to the kubernetes repository (api/discovery/). Run it from
# pkg/kinds, as `go generate ./pkg/kinds` does. It downloads the
# k8s.io/kubernetes module into the module cache once; go.mod is not changed.
set -eu

KUBERNETES_VERSION=v1.34.4

# Outside the main module, so that neither go.mod nor go.sum is touched.
dir=$(cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$dir" ]; then
	echo "gen.sh: could not download k8s.io/kubernetes@${KUBERNETES_VERSION}" >&2
	exit 1
fi

go run ./gen -kubernetes-version "${KUBERNETES_VERSION}" -o zz_generated_table.go \
	"$dir/api/discovery/aggregated_v2.json" \
	"$dir/api/discovery/api__v1.json"
