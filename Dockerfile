# shard-router as a KRM function image: a static binary on an empty base, run
# as nobody (kpt runs function containers with --user nobody).
#
#   docker build -t shard-router:dev .      # compiles in the builder stage
#   make image                              # podman, through hack/image.sh
#
# Targets: the default (last) stage compiles in a Go image; `prebuilt` makes
# the identical image from a static binary built on the host (make build),
# for machines that cannot pull the Go image.

# The Go image of the builder stage; podman without unqualified-search
# registries needs a fully qualified name here (--build-arg GO_IMAGE=...).
ARG GO_IMAGE=golang:1.26.8

# builder: a static, reproducible build of ./cmd/shard-router, without the
# live commands (apply: a Kubernetes client, kpt's live library), which
# would triple the image and add tens of milliseconds to every function run.
FROM ${GO_IMAGE} AS builder
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -tags nolive \
      -ldflags "-s -w -X github.com/shard-router/shard-router/pkg/cli.Version=${VERSION}" \
      -o /out/shard-router ./cmd/shard-router

# base: everything of the final image but the binary.
FROM scratch AS base
ARG VERSION=dev
LABEL org.opencontainers.image.title="shard-router" \
      org.opencontainers.image.description="KRM function that routes kpt package resources to kube contexts and etcd datastores" \
      org.opencontainers.image.version="${VERSION}"
# kpt passes --user nobody: the name must resolve in the image.
COPY hack/image/passwd /etc/passwd
COPY hack/image/group /etc/group
USER 65534:65534
ENTRYPOINT ["/shard-router"]

# prebuilt: the final image from a static binary built on the host (make
# build-fn: CGO_ENABLED=0, -tags nolive), copied in as bin/shard-router by
# hack/image.sh. Needs no image but scratch.
FROM base AS prebuilt
COPY bin/shard-router /shard-router

# The default target: the final image from the builder stage.
FROM base
COPY --from=builder /out/shard-router /shard-router
