# shard-router: a KRM function that routes kpt packages to kube contexts and etcd datastores.
# `make help` lists the targets.

SHELL := /bin/bash
BIN := $(CURDIR)/bin
TOOLS_BIN := $(CURDIR)/.tools/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/shard-router/shard-router/pkg/cli.Version=$(VERSION)
IMAGE ?= localhost/shard-router:$(VERSION)

.PHONY: help build build-fn test test-slow docs update-kinds e2e tools tools-kpt tools-cluster tools-flux fmt vet verify clean

help: ## List the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build bin/shard-router (static)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/shard-router ./cmd/shard-router

build-fn: ## Build bin/shard-router-fn: without the live commands (-tags nolive), for the function's image
	CGO_ENABLED=0 go build -trimpath -tags nolive -ldflags '$(LDFLAGS)' -o $(BIN)/shard-router-fn ./cmd/shard-router

test: ## The fast tier: unit, golden and fuzz-seed tests (go test -short, hermetic)
	go test -short ./cmd/... ./hack/... ./internal/... ./pkg/...

test-slow: tools-kpt ## The whole suite, with what -short skips: big inputs, strace, the real kpt, kube-apiserver's flag parser
	go test -timeout 30m ./cmd/... ./hack/... ./internal/... ./pkg/... ./test/kubeapiserver/...

update-kinds: ## Move to another Kubernetes release: make update-kinds KUBE_VERSION=1.x.y (go.mod, tools/cluster, pkg/kinds)
	KUBE_VERSION=$(KUBE_VERSION) hack/update-kinds.sh

docs: ## Regenerate the command reference (docs/reference) from the commands' help
	go run ./hack/docs

tools-kpt: ## Build kpt and the kyaml no-op function into .tools/bin
	$(MAKE) -C tools kpt BIN=$(TOOLS_BIN)

tools-cluster: ## Build etcd, kube-apiserver and kube-controller-manager into .tools/bin
	$(MAKE) -C tools cluster BIN=$(TOOLS_BIN)

tools-flux: ## Build Flux's source-controller and kustomize-controller into .tools/bin (the GitOps e2e)
	$(MAKE) -C tools flux BIN=$(TOOLS_BIN)

tools: tools-kpt tools-cluster tools-flux ## Build every tool the e2e tests need

e2e: tools image ## Real kpt over the examples and demo, the podman image, two real clusters, and a real Flux
	go test -tags e2e -count=1 -timeout 40m ./test/e2e/...

fmt: ## Format the code
	gofmt -w cmd internal pkg test hack

vet: ## go vet and a gofmt check
	go vet ./...
	go vet -tags e2e ./test/...
	@out=$$(gofmt -l cmd internal pkg test hack 2>/dev/null); if [ -n "$$out" ]; then echo "not gofmt'd:"; echo "$$out"; exit 1; fi

verify: vet test ## Everything CI checks before e2e

clean: ## Remove build outputs
	rm -rf $(BIN)

include $(wildcard hack/make/*.mk hack/bench/bench.mk)
