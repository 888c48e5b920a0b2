#!/usr/bin/env bash
# Moves shard-router to another Kubernetes release, in one step (run by
# `make update-kinds KUBE_VERSION=1.x.y`):
#   - the k8s.io/* requirements of go.mod (k8s.io/api, apimachinery,
#     apiserver: v0.x.y) and of tools/cluster/go.mod (k8s.io/kubernetes
#     v1.x.y and its staging replacements), so that the tests run that
#     kube-apiserver;
#   - pkg/kinds: the kinds table and the cohabitation lists, generated from
#     that release's discovery documents and storage factory, and the kinds
#     older releases served, from the k8s.io/api module of each; the
#     messages that name the release read it from the table.
# Then it runs the kinds tests. What stays hand-kept is listed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

v=${KUBE_VERSION:?"give KUBE_VERSION=1.x.y"}
v=${v#v}
if [[ ! $v =~ ^1\.([0-9]+)\.([0-9]+)$ ]]; then
	echo "update-kinds: KUBE_VERSION must be 1.x.y, not $v" >&2
	exit 1
fi
kube=v$v
staging=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
echo "update-kinds: k8s.io/kubernetes $kube, staging modules $staging"

# The project's own module.
go get k8s.io/api@"$staging" k8s.io/apimachinery@"$staging" k8s.io/apiserver@"$staging"
go mod tidy

# The kube-apiserver the tests build: k8s.io/kubernetes requires its staging
# modules at v0.0.0 and replaces them, so every replacement moves with it.
(
	cd tools/cluster
	export GOWORK=off
	go mod edit -require="k8s.io/kubernetes@$kube" -require="k8s.io/component-base@$staging"
	sed -i -E "s#^([[:space:]]+k8s\.io/[^ ]+ => k8s\.io/[^ ]+ )v0\.[0-9]+\.[0-9]+\$#\1$staging#" go.mod
	go mod tidy
)

# The generated tables, from the new release.
(cd pkg/kinds && KUBE_VERSION=$kube sh gen/gen.sh)
go test ./pkg/kinds/...

cat <<NOTE

update-kinds: done. Review by hand, with the release notes of $kube:
  - pkg/kinds/legacy.go: the few kinds kept by hand for their plural names
    (extensions kinds and their storage); every other kind an older release
    served is generated from the k8s.io/api module (zz_generated_legacy.go),
    so a removed API is covered by the next update-kinds;
  - pkg/kinds/scheme_test.go: the k8s.io/api packages it imports (a new
    group-version is a new import);
  - pkg/kinds/storage.go separateStorage: groups served outside the core
    storage factory (apiextensions-apiserver, kube-aggregator).
Then: make test test-slow e2e.
NOTE
