# The local fleet (internal/localfleet, hack/fleet): one real cluster per
# context of a package's ShardConfig, on 127.0.0.1, left running for the
# live commands to be tried on. Included by the Makefile, which defines
# TOOLS_BIN and tools-cluster.

FLEET_PKG ?= examples/per-namespace
FLEET_DIR ?= $(CURDIR)/.fleet
FLEET_TOOLS := etcd kube-apiserver kube-controller-manager

.PHONY: fleet fleet-down

fleet: ## Start one local cluster per context of FLEET_PKG's ShardConfig (default examples/per-namespace); kubeconfig in .fleet/
	@missing=; for t in $(FLEET_TOOLS); do [ -x "$(TOOLS_BIN)/$$t" ] || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "fleet: building$$missing into $(TOOLS_BIN) (make tools-cluster; the first build takes minutes)" >&2; \
		$(MAKE) --no-print-directory tools-cluster >&2 || exit 1; \
	fi
	@go run ./hack/fleet up -package $(FLEET_PKG) -dir $(FLEET_DIR) -tools $(TOOLS_BIN)

fleet-down: ## Stop every process `make fleet` started (pid files in .fleet/), and remove .fleet/
	@go run ./hack/fleet down -dir $(FLEET_DIR)
