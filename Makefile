# Strata's entry points. `make run` and `make test` are the two a newcomer
# needs; everything else is for development and CI.

GO        ?= go
SEED      ?=
SCENARIO  ?= counters
SEEDS     ?= 1000
BENCHTIME ?= 1s
PKGS      := ./...

.PHONY: run test sim sim-sweep lint vet fmt-check bench fuzz clean build

## run: start one combined broker+controller on 127.0.0.1:9092, data in ./data
run: build
	./bin/strata serve

## build: build the strata binary into ./bin
build:
	$(GO) build -o bin/strata ./cmd/strata

## test: everything a change can break (vet, gofmt, unit, property, sim seeds, determinism, real clients)
test: vet fmt-check
	$(GO) test -count=1 -timeout 30m $(PKGS)

## sim: replay one seed (SEED=N; a random seed when unset) of SCENARIO
sim: build
	./bin/strata sim -scenario $(SCENARIO) $(if $(SEED),-seed $(SEED),)

## sim-sweep: run SEEDS consecutive seeds of SCENARIO (nightly; not part of `make test`)
sim-sweep: build
	./bin/strata sim -scenario $(SCENARIO) -sweep $(SEEDS)

## lint: go vet and gofmt
lint: vet fmt-check

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## bench: the benchmarks behind docs/benchmarks.md
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem $(PKGS)

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin
