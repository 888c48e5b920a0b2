# The container image and the kpt end-to-end tests. Included by the Makefile,
# which defines BIN, VERSION, IMAGE and the build and tools-kpt targets.

.PHONY: image e2e-kpt

image: build-fn ## Build the image $(IMAGE) (default localhost/shard-router:VERSION) with podman
	VERSION=$(VERSION) BINARY=$(BIN)/shard-router-fn hack/image.sh $(IMAGE)

e2e-kpt: tools-kpt ## The real kpt over every example (eval, render) and the top-level demo
	go test -tags e2e -count=1 -run 'TestExamples|TestRenderDemo' ./test/e2e/...
