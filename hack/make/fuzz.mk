# Fuzzing: `make fuzz` runs every Fuzz* target for FUZZTIME each (default 30s).
# Their seed corpora, with every crasher found (testdata/fuzz/), run in `make test`.

FUZZTIME ?= 30s

fuzz: ## Run every Go fuzz target for FUZZTIME each (default 30s)
	FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh
