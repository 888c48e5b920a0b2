#!/usr/bin/env bash
# Builds the shard-router container image with podman (see the Dockerfile).
#
#   hack/image.sh [IMAGE]        IMAGE defaults to localhost/shard-router:$VERSION
#
# Environment:
#   VERSION      version stamped in the image label (default: dev)
#   IMAGE_BUILD  source   the Dockerfile's default target: compiles in the Go
#                         builder image (GO_IMAGE), which must be pullable or present;
#                prebuilt --target prebuilt: the same final image from a static
#                         binary built on the host (BINARY), in a minimal context;
#                auto     (default) source when GO_IMAGE is present locally,
#                         else prebuilt: nothing can be pulled on our CI machines.
#   BINARY       the static binary for prebuilt (default: bin/shard-router-fn,
#                from `make build-fn`: the function without the live commands)
#   GO_IMAGE     the builder image for source (default: the Dockerfile's)
#   CONTAINERS_CONF  default: hack/containers.conf (no systemd, runc; see there)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=${VERSION:-dev}
image=${1:-localhost/shard-router:${version}}
mode=${IMAGE_BUILD:-auto}
binary=${BINARY:-$repo/bin/shard-router-fn}
go_image=${GO_IMAGE:-$(sed -n 's/^ARG GO_IMAGE=//p' "$repo/Dockerfile")}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/hack/containers.conf}

if ! command -v podman >/dev/null; then
	echo "image.sh: podman is not installed (hack/install-packages.sh installs it)" >&2
	exit 1
fi

if [ "$mode" = auto ]; then
	if podman image exists "$go_image"; then
		mode=source
	else
		mode=prebuilt
		echo "image.sh: builder image $go_image is not present: building --target prebuilt from $binary" >&2
	fi
fi

# The label as an option too: podman 4.3's layer cache ignores build-arg and
# label values, so the Dockerfile's LABEL may come from an older build.
version_args=(--build-arg "VERSION=$version" --label "org.opencontainers.image.version=$version")

case "$mode" in
source)
	podman build --file "$repo/Dockerfile" --build-arg "GO_IMAGE=$go_image" \
		"${version_args[@]}" --tag "$image" "$repo"
	;;
prebuilt)
	if [ ! -x "$binary" ]; then
		echo "image.sh: $binary not found: run make build-fn (or set BINARY)" >&2
		exit 1
	fi
	# scratch has no libc: refuse a binary that needs one.
	if command -v go >/dev/null && ! go version -m "$binary" | grep -q 'CGO_ENABLED=0'; then
		echo "image.sh: $binary is not a static build (CGO_ENABLED=0): run make build-fn" >&2
		exit 1
	fi
	# Only what the prebuilt stage copies, at the paths it copies them from.
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' EXIT
	mkdir -p "$ctx/bin" "$ctx/hack/image"
	cp "$binary" "$ctx/bin/shard-router"
	cp "$repo/hack/image/passwd" "$repo/hack/image/group" "$ctx/hack/image/"
	# --layers=false: no layer cache (the same binary with another VERSION
	# would get the cached image, label and all) and no intermediate images.
	# Without a compile step it costs seconds.
	podman build --file "$repo/Dockerfile" --target prebuilt --layers=false \
		"${version_args[@]}" --tag "$image" "$ctx"
	;;
*)
	echo "image.sh: IMAGE_BUILD must be auto, source or prebuilt, not $mode" >&2
	exit 1
	;;
esac
echo "image.sh: built $image ($mode)" >&2
