#!/bin/sh
# gen.sh regenerates ../zz_generated_table.go from the discovery documents
# checked in to the kubernetes repository (api/discovery/),
# ../zz_generated_cohabitation.go from kube-apiserver's storage factory, and
# ../zz_generated_legacy.go from the k8s.io/api module of older releases. Run
# it from pkg/kinds, as `go generate ./pkg/kinds` does. It downloads the
# k8s.io/kubernetes module and those k8s.io/api versions into the module
# cache once; go.mod is not changed.
#
# The Kubernetes version is the one tools/cluster builds kube-apiserver from
# (its go.mod's k8s.io/kubernetes requirement), so the table always describes
# the kube-apiserver the tests run; KUBE_VERSION=v1.x.y overrides it.
# `make update-kinds KUBE_VERSION=1.x.y` bumps everything at once.
set -eu

KUBERNETES_VERSION=${KUBE_VERSION:-$(cd ../../tools/cluster && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)}

# Outside the main module, so that neither go.mod nor go.sum is touched.
dir=$(cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$dir" ]; then
	echo "gen.sh: could not download k8s.io/kubernetes@${KUBERNETES_VERSION}" >&2
	exit 1
fi

# The kinds older releases served: the k8s.io/api module of every older
# minor release the module proxy serves (its first patch release of each),
# oldest first.
minor=$(echo "${KUBERNETES_VERSION}" | cut -d. -f2)
api_dirs=
for v in $(cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS=-mod=mod go list -m -versions k8s.io/api | tr ' ' '\n' |
	grep -E '^v0\.[0-9]+\.[0-9]+$' | sort -t. -k2,2n -k3,3n | awk -F. -v m="$minor" '$2 < m && !seen[$2]++'); do
	d=$(cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/api@$v" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	api_dirs="$api_dirs -api-dir $d"
done

# shellcheck disable=SC2086 # api_dirs holds several flags
go run ./gen -kubernetes-version "${KUBERNETES_VERSION}" -o zz_generated_table.go \
	-kubernetes-dir "$dir" -cohabitation-o zz_generated_cohabitation.go \
	$api_dirs -legacy-o zz_generated_legacy.go \
	"$dir/api/discovery/aggregated_v2.json" \
	"$dir/api/discovery/api__v1.json"
