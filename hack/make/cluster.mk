# The real-cluster end-to-end test (test/e2e/cluster_test.go). Included by
# the Makefile, which defines the tools-kpt and tools-cluster targets.

.PHONY: e2e-cluster

e2e-cluster: tools-kpt tools-cluster ## Real clusters (etcd, kube-apiserver, kube-controller-manager): placement, moves, datastore changes; rollout waves and their promotion gates on three (a real Prometheus); many runners on one fleet (locks, stale OUT_DIRs, the wrong cluster)
	go test -tags e2e -count=1 -timeout 30m -v -run 'TestCluster|TestRollout|TestFleetLock' ./test/e2e/...

.PHONY: bench-status-fleet

bench-status-fleet: tools-kpt tools-cluster ## status over 50 contexts x 1,000 objects vs one context, on one real kube-apiserver, also behind a proxy adding STATUS_BENCH_RTT (20ms) per round trip
	go test -tags e2e -count=1 -timeout 30m -run '^$$' -bench BenchmarkStatusFleet -benchtime 3x ./test/e2e/
