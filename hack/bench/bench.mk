# Benchmarks (issue 6). The Makefile includes this file. Benchmarks are not
# tests: nothing here asserts a time; `make bench` prints numbers.
#   BENCH_SIZES, BENCH_CONTEXTS, BENCH_RUNS, ... : see hack/bench/run.sh

.PHONY: bench bench-go bench-process bench-apply bench-rollout bench-gates bench-locks bench-preflight

bench: bench-go bench-process bench-apply bench-rollout bench-gates bench-locks bench-preflight bench-fleet ## Go benchmarks, the whole-process comparison with the kyaml no-op, apply vs kpt, waved vs all at once, with gates vs without, the preflight vs without it and server-side vs client-side apply, the cost of a context (16, 64, 256 contexts)

bench-go: ## Go benchmarks: routing per item (2, 64, 1000 contexts), item decoding, streaming vs kyaml path, split
	go test -run '^$$' -bench 'BenchmarkRoute' -benchtime 20x ./pkg/route/
	go test -run '^$$' -bench 'BenchmarkItemDecode' -benchtime 2000x ./internal/yamlio/
	go test -run '^$$' -bench 'BenchmarkRun' -benchtime 3x ./internal/yamlio/
	go test -run '^$$' -bench 'BenchmarkSplit$$' -benchtime 2x ./pkg/split/
	go test -run '^$$' -bench 'BenchmarkSplitEngine' -benchtime 1x -timeout 30m ./pkg/split/ # each engine against kpt, at most 1.05 (issue 29)
	go test -run '^$$' -bench 'BenchmarkSplitAgain' -benchtime 2x ./pkg/plan/ # again/fresh, at most 1.3 (issue 19)

bench-process: $(TOOLS_BIN)/kyaml-noop ## Whole-process wall time and peak RSS vs the kyaml no-op
	KYAML_NOOP=$(TOOLS_BIN)/kyaml-noop hack/bench/run.sh

$(TOOLS_BIN)/kyaml-noop:
	$(MAKE) -C tools kyaml-noop BIN=$(TOOLS_BIN)

BASE ?= HEAD~1

.PHONY: bench-compare
bench-compare: ## Before/after: the shard-router of git revision BASE (default HEAD~1) against the working tree's
	BASE=$(BASE) hack/bench/compare.sh

bench-apply: tools-kpt tools-cluster ## shard-router apply vs kpt live apply per context: ~1,000 objects, 2 real clusters, create and no change
	go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkApplyVsKpt' -benchtime 1x -timeout 30m ./test/e2e/

bench-rollout: tools-kpt tools-cluster ## a change rolled out in two waves minus its bake, vs all at once, beside kpt live apply in the same order: 600 objects, 3 real clusters (issue 28)
	go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkRolloutVsAllAtOnce' -benchtime 1x -timeout 30m ./test/e2e/

bench-gates: tools-cluster ## a rollout whose canary has 3 gates (prometheus, http, kubernetes) minus its bake, vs the same rollout without gates, at most 1.1: 600 objects, 3 real clusters, a real Prometheus (issue 34)
	go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkRolloutGates' -benchtime 1x -timeout 30m ./test/e2e/

# build-base builds the shard-router of git revision $(1) into
# $(BIN)/shard-router-$(2), from a copy of that revision's tree: what a
# before/after benchmark runs as BASE_BIN.
define build-base
rm -rf $(BIN)/$(2)-src && mkdir -p $(BIN)/$(2)-src
	git archive $(1) | tar -x -C $(BIN)/$(2)-src
	cd $(BIN)/$(2)-src && CGO_ENABLED=0 go build -trimpath -o $(BIN)/shard-router-$(2) ./cmd/shard-router
	rm -rf $(BIN)/$(2)-src
endef

# LOCKS_BASE is the last commit before issue 35's locks and stale checks.
LOCKS_BASE ?= c9fc3cc

bench-locks: tools-kpt tools-cluster ## an apply that changes every context, with the fleet's locks and stale checks vs LOCKS_BASE without them: 2 real clusters (issue 35)
	$(call build-base,$(LOCKS_BASE),locks-base)
	BASE_BIN=$(BIN)/shard-router-locks-base go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkApplyLocks' -benchtime 1x -timeout 30m ./test/e2e/

.PHONY: bench-fleet bench-fleet-base
BENCH_FLEET_SIZES ?= 16,64,256
bench-fleet: tools-kpt tools-cluster ## the cost of a context (issue 36): 1,536 objects over 16, 64 and 256 contexts of dense fleets of 4 kube-apiservers each, all up at once, every step run at each size in turn (BENCH_FLEET_SIZES=16,64 shrinks it): apply, status (BENCH_FLEET_ROUNDS=3 runs each of the first apply, no change and status), plan, split, a rollout; wall, CPU, peak RSS, the clusters' CPU; vs kpt live apply per context (BENCH_FLEET_KPT_SAMPLE=32 of them, 0: all); about 10 minutes
	BENCH_FLEET_SIZES=$(BENCH_FLEET_SIZES) go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkFleet$$' -benchtime 1x -timeout 60m ./test/e2e/

# PREFLIGHT_BASE is the last commit before issue 41's preflight (every
# cluster asked before any write).
PREFLIGHT_BASE ?= 16b7936

bench-preflight: tools-kpt tools-cluster ## apply with the preflight vs PREFLIGHT_BASE without it (create, no change, one object changed per context, every object changed), and server-side vs client-side apply beside kpt's own: ~1,000 objects, 2 real clusters (issues 41, 42)
	$(call build-base,$(PREFLIGHT_BASE),preflight-base)
	BASE_BIN=$(BIN)/shard-router-preflight-base go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkPreflight' -benchtime 1x -timeout 30m ./test/e2e/

# FLEET_BASE is the last commit before issue 43's reads at once.
FLEET_BASE ?= 16b7936

bench-fleet-base: tools-kpt tools-cluster ## bench-fleet with the shard-router of FLEET_BASE (default: before issue 43) and the working tree's side by side on the same fleets, alternating, and their 256-vs-16 ratios against the bounds; BENCH_FLEET_SIZES=16,256 for the two ends
	$(call build-base,$(FLEET_BASE),fleet-base)
	BASE_BIN=$(BIN)/shard-router-fleet-base BENCH_FLEET_SIZES=$(BENCH_FLEET_SIZES) go test -tags e2e -count=1 -run '^$$' -bench 'BenchmarkFleet$$' -benchtime 1x -timeout 90m ./test/e2e/
