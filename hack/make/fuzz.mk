# Fuzzing (hack/fuzz.sh): every Fuzz* target in turn, then a table of each
# one's executions and executions per second. Their seed corpora, with
# every failing input found (testdata/fuzz/), run in `make test`.
#
# `make fuzz` is CI's: a fixed number of executions per target (never a
# wall time, which the fuzz engine can fail at), from an empty cache, so
# every run does the same work; it fails only on an input that plain
# `go test` fails on. `make fuzz-long` is a campaign outside CI: minutes
# per target, one worker, growing go's own cache of interesting inputs
# (the one `go test -fuzz` uses).

FUZZTIME ?= 10000x
FUZZLONGTIME ?= 5m

.PHONY: fuzz fuzz-long

fuzz: ## Fuzz every target for FUZZTIME executions each (default 10000x), as CI does
	FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh

fuzz-long: ## Fuzz every target for FUZZLONGTIME each (default 5m), one worker, keeping go's fuzz cache
	FUZZTIME=$(FUZZLONGTIME) FUZZPARALLEL=$${FUZZPARALLEL:-1} FUZZCACHE=$${FUZZCACHE:-$$(go env GOCACHE)/fuzz/$$(go list -m)} ./hack/fuzz.sh
