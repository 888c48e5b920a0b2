# The local fleet (internal/localfleet, hack/fleet): one real cluster per
# context of a package's ShardConfig, on 127.0.0.1, left running for the
# live commands to be tried on. Included by the Makefile, which defines
# TOOLS_BIN and tools-cluster.
#
# FLEET_CONTEXTS=N starts a dense fleet instead, a device for measuring the
# cost of a context (real clusters are one context each): FLEET_CLUSTERS
# clusters (default 4) shared by N contexts, context i on cluster i % 4,
# and a generated package in .fleet/package whose ShardConfig gives each
# context Namespaces of its own (FLEET_NAMESPACES, default 256, each with
# FLEET_CONFIGMAPS ConfigMaps, default 5), so each has its own inventory.

FLEET_PKG ?= examples/per-namespace
FLEET_DIR ?= $(CURDIR)/.fleet
FLEET_CONTEXTS ?=
FLEET_CLUSTERS ?= 4
FLEET_NAMESPACES ?= 256
FLEET_CONFIGMAPS ?= 5
FLEET_DENSE = $(if $(FLEET_CONTEXTS),-contexts $(FLEET_CONTEXTS) -clusters $(FLEET_CLUSTERS) -namespaces $(FLEET_NAMESPACES) -configmaps $(FLEET_CONFIGMAPS))
FLEET_TOOLS := etcd kube-apiserver kube-controller-manager

.PHONY: fleet fleet-down

fleet: ## Start one local cluster per context of FLEET_PKG's ShardConfig (default examples/per-namespace); kubeconfig in .fleet/. FLEET_CONTEXTS=256 FLEET_CLUSTERS=4: a dense fleet for measuring, 256 contexts on 4 clusters, its package in .fleet/package
	@missing=; for t in $(FLEET_TOOLS); do [ -x "$(TOOLS_BIN)/$$t" ] || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "fleet: building$$missing into $(TOOLS_BIN) (make tools-cluster; the first build takes minutes)" >&2; \
		$(MAKE) --no-print-directory tools-cluster >&2 || exit 1; \
	fi
	@go run ./hack/fleet up -package $(FLEET_PKG) $(FLEET_DENSE) -dir $(FLEET_DIR) -tools $(TOOLS_BIN)

fleet-down: ## Stop every process `make fleet` started (pid files in .fleet/), and remove .fleet/
	@go run ./hack/fleet down -dir $(FLEET_DIR)
