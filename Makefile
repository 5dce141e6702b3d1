# Strata's entry points. `make run` and `make test` are the two a newcomer
# needs; everything else is for development and CI.

GO        ?= go
SEED      ?=
SCENARIO  ?= log
SEEDS     ?= 1000
BENCHTIME ?= 1s
PKGS      := ./...

.PHONY: kgo-suite run check test sim sim-sweep sim-sweep-kraft sim-compare crash-sweep lint vet fmt-check bench bench-failover bench-partition-failover bench-groups bench-txn bench-security bench-strata bench-replicated bench-hostile fuzz clean build build-bench chaos

## run: start one combined broker+controller on 127.0.0.1:9092, data in ./data
run: build
	./bin/strata serve

## build: build the strata binary into ./bin
build:
	$(GO) build -o bin/strata ./cmd/strata

## check: the fast tier, to run while you work (under 2 minutes on 2 cores): vet, gofmt and go test -short
## over every package but interop/ and attack/: every pinned seed, the first 20 seeds of each scenario, the short
## crash tests, in-process nodes; no real-process, interop or attack tests and no race detector. Run make test
## before you commit: it is the full tier, and the one .ci/run runs
check: vet fmt-check
	$(GO) test -short $$($(GO) list $(PKGS) | grep -v -e '/interop$$' -e '/attack$$')

## test: everything a change can break (vet, gofmt, unit, property, sim seeds, determinism, real clients);
## node/, cmd/ and the packages around the binary (internal/bench, internal/top, and internal/proccluster with
## the real-process system tests, whose strata binary is then built with -race too, and chaos/ with a 30 s
## real-process nemesis campaign on a seed from the clock, printed for make chaos SEED=) run under the race
## detector; the attack suite (attack/: a real node fed hostile input while a victim client's latency is
## measured) runs last and alone, since its bounds compare latencies and no other package may share the CPU meanwhile
RACE_PKGS := ./node/... ./cmd/... ./internal/bench/... ./internal/top/... ./internal/proccluster/... ./chaos/...
test: vet fmt-check
	$(GO) test -count=1 -timeout 30m $$($(GO) list $(PKGS) | grep -v -e '/node$$' -e '/node/' -e '/cmd/' -e '/attack$$' \
	  -e '/internal/bench' -e '/internal/top$$' -e '/internal/proccluster$$' -e '/chaos$$')
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 10m ./attack/
	$(GO) test -tags strata_plant -count=1 -timeout 10m -run 'TestPlanted' ./sim/scenario/

## chaos: the seeded real-process campaign (docs/simulation.md): three `strata serve` processes, each in its own
## network namespace with its data on a tmpfs of its own, under the nemesis's drawn mix of kill -9, SIGSTOP,
## partitions, one-way cuts, tc clogs and full disks for DURATION while a kgo producer and consumer run, then the
## heal, a liveness probe, a final read and the replicated scenario's checks on the client's history. SEED=N replays a seed's mix and schedule (a seed from the clock when
## unset, printed); needs root and iproute2 (skips without them, fails under CI=true). make test runs a 30 s one
DURATION      ?= 60s
CHAOS_TIMEOUT ?= 30m
chaos:
	$(GO) test -count=1 -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' -v ./chaos/ -chaos.seed=$(or $(SEED),0) -chaos.duration=$(DURATION)

## sim: replay one seed (SEED=N; a random seed when unset) of SCENARIO (default log: the Kafka data path
## under the nemesis; others: replicated, replicated5, groups (a consumer group under member faults and
## coordinator failovers), txn (transactional producers and read_committed readers under coordinator
## strikes), secure (SASL logins and ACLs under the nemesis), kraft, kraft5, idle); a failing seed writes its
## history as porcupine's HTML (SCENARIO-seedN.html) and prints its path under the replay command
sim: build
	./bin/strata sim -scenario $(SCENARIO) $(if $(SEED),-seed $(SEED),) $(SIM_ARGS)

## sim-sweep: run SEEDS consecutive seeds of SCENARIO (nightly; not part of `make test`), e.g.
## make sim-sweep SCENARIO=log SEEDS=2000
sim-sweep: build
	./bin/strata sim -scenario $(SCENARIO) -sweep $(SEEDS)

## sim-sweep-kraft: run SEEDS consecutive seeds of each kraft shape (kraft: 3 voters, kraft5: 5 voters; 2 observers each)
sim-sweep-kraft: build
	./bin/strata sim -scenario kraft -sweep $(SEEDS)
	./bin/strata sim -scenario kraft5 -sweep $(SEEDS)

## sim-compare: the replicated campaigns (replicated: 3 nodes at RF 3; replicated5: 5 nodes at RF 5 and 3;
## COMPARE_SEEDS seeds each, default 200) in the default durable mode and in Kafka's page-cache mode
## (-page-cache), with the failures of each counted by check: the default mode must show none; page-cache
## mode shows the lost acknowledged records it permits. Failing seeds' histories go to .sim-compare-html/
sim-compare: build
	@mkdir -p .sim-compare-html; for scenario in replicated replicated5; do for mode in "" "-page-cache"; do \
	  echo "== $$scenario $${mode:-(durable, the default)}: $(or $(COMPARE_SEEDS),200) seeds"; \
	  ./bin/strata sim -scenario $$scenario $$mode -html-dir .sim-compare-html -sweep $(or $(COMPARE_SEEDS),200) > .sim-compare.out 2>&1; \
	  tail -1 .sim-compare.out; \
	  grep -o '^    ([a-i]) [a-z ]*' .sim-compare.out | sort | uniq -c; \
	done; done; rm -f .sim-compare.out

## crash-sweep: seeds 1..SEEDS of core/log's crash tests (TestCrashRecovery, TestCompactCrashRecovery),
## pinned regression seeds included (nightly; not part of `make test`, which runs 200 of each)
crash-sweep:
	STRATA_LOG_CRASH_SEEDS=$(SEEDS) STRATA_LOG_COMPACT_SEEDS=$(SEEDS) \
	  $(GO) test -count=1 -timeout 60m -run '^(TestCrashRecovery|TestCompactCrashRecovery)$$' ./core/log/

## lint: go vet and gofmt
lint: vet fmt-check

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags strata_plant ./core/plant/ ./sim/scenario/
	$(GO) vet -tags kfake ./cmd/strata/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## bench: the benchmarks behind docs/benchmarks.md
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem $(PKGS)

## bench-failover: SIGKILL the active controller of a 3-process cluster RUNS times; prints median/min/max
## of the time to a new leader and to a successful CreateTopics (FETCH_TIMEOUT_MS, ELECTION_TIMEOUT_MS
## set controller.quorum.fetch.timeout.ms and controller.quorum.election.timeout.ms)
RUNS ?= 10
FETCH_TIMEOUT_MS ?=
ELECTION_TIMEOUT_MS ?=
bench-failover:
	STRATA_FAILOVER_RUNS=$(RUNS) STRATA_FAILOVER_FETCH_TIMEOUT_MS=$(FETCH_TIMEOUT_MS) STRATA_FAILOVER_ELECTION_TIMEOUT_MS=$(ELECTION_TIMEOUT_MS) \
	  $(GO) test -count=1 -timeout 30m -run '^TestKRaftFailoverProcesses$$' -v ./internal/proccluster/

## bench-partition-failover: SIGKILL the leader of an RF 3 partition on a 3-process cluster RUNS times;
## prints median/min/max of the time to the first successful acks=all produce (default timeouts)
bench-partition-failover:
	STRATA_PARTITION_FAILOVER_RUNS=$(RUNS) $(GO) test -count=1 -timeout 30m -run '^TestPartitionFailoverProcesses$$' -v ./internal/proccluster/

## bench-groups: consumer group figures (docs/benchmarks.md), RUNS runs each: rebalance of 10 kgo members over
## 100 partitions when one joins (eager, cooperative-sticky, KIP-848), a static member's restart, and coordinator
## failover (SIGKILL, 3 processes) with 100 and 10,000 committed offsets to reload; prints median/min/max
bench-groups:
	@STRATA_GROUP_BENCH_RUNS=$(RUNS) $(GO) test -count=1 -timeout 60m -run '^(TestGroupRebalanceBenchmark|TestGroupCoordinatorFailoverBenchmark)$$' -v ./interop/ > .bench-groups.out 2>&1; \
	  status=$$?; grep -E '^(rebalance|static|coordinator|--- |ok|FAIL)|Error:|Messages:' .bench-groups.out; rm -f .bench-groups.out; exit $$status

## bench-txn: exactly-once figures (docs/benchmarks.md), RUNS runs each on one node process, modes interleaved:
## idempotent produce against non-idempotent (acks=all, 1 KiB records), consume-transform-produce throughput of a
## kgo GroupTransactSession at commit intervals of 100 ms and 1 s against the same pipeline without transactions,
## and latency to a read_committed consumer against read_uncommitted; prints medians [min, max] and ratios.
## Not part of `make test`.
bench-txn:
	@STRATA_TXN_BENCH_RUNS=$(RUNS) $(GO) test -count=1 -timeout 60m -run '^(TestIdempotentProduceBenchmark|TestTransactBenchmark|TestTxnLatencyBenchmark)$$' -v ./interop/ > .bench-txn.out 2>&1; \
	  status=$$?; grep -E '^([a-z].*: [0-9]+ runs, median|--- |ok|FAIL)|Error:|Messages:' .bench-txn.out; rm -f .bench-txn.out; exit $$status

## bench-security: security figures (docs/benchmarks.md), RUNS runs each on one in-process secured node: produce and
## consume MiB/s, produce and end-to-end p99 over SASL_SSL (SCRAM-SHA-512) against PLAINTEXT, listeners interleaved;
## the SCRAM-SHA-512 handshake rate over SASL_PLAINTEXT and SASL_SSL (interop/secure_bench_test.go)
bench-security:
	@STRATA_SECURITY_BENCH_RUNS=$(RUNS) $(GO) test -count=1 -timeout 60m -run '^TestSecurityBenchmark$$' -v ./interop/ > .bench-security.out 2>&1; \
	  status=$$?; grep -E '^(security|--- |ok|FAIL)|Error:|Messages:' .bench-security.out; rm -f .bench-security.out; exit $$status

## build-bench: bin/strata-bench, the strata binary with franz-go's kfake linked in for `strata bench`'s kfake
## target (-tags kfake; bin/strata, the production binary, leaves kfake out). The bench targets below use it.
build-bench:
	$(GO) build -tags kfake -o bin/strata-bench ./cmd/strata

## bench-strata: `strata bench` with its defaults (a strata child node, kfake and the fsync ceiling; 6 partitions,
## 1 KiB records, 10 s phases); BENCH_ARGS adds flags, e.g. BENCH_ARGS='--runs 5 --json'. Not part of `make test`.
BENCH_ARGS ?=
bench-strata: build-bench
	./bin/strata-bench bench $(BENCH_ARGS)

## bench-hostile: the figures of docs/benchmarks.md "Hostile input (issue 22)", HOSTILE_RUNS interleaved runs each
## (medians): (a) produce with kgo's default compression (snappy) of text records, strata beside kfake; (b) one node
## validating on its workers (strata) beside one validating on its loop (strata-nooffload), fed prebuilt zstd
## batches by the raw producer; (c) in the same run, phase 3's client again while a second client floods zstd batches
## (flood p99 / quiet p99). First the slow end-to-end tests of those modes. Not part of `make test`; about 15 minutes.
HOSTILE_RUNS ?= 5
bench-hostile: build-bench
	STRATA_BENCH_SLOW_TESTS=1 $(GO) test -race -count=1 -timeout 10m -run '^(TestBenchCompressedWithFlood|TestBenchStrataNoOffloadRaw)$$' ./internal/bench/
	./bin/strata-bench bench --targets strata,kfake --compression default --runs $(HOSTILE_RUNS) $(BENCH_ARGS)
	./bin/strata-bench bench --targets strata,strata-nooffload --producer raw --compression zstd --flood-producers 1 --runs $(HOSTILE_RUNS) $(BENCH_ARGS)

## bench-replicated: `strata bench` on 3 combined nodes (RF 3, min.insync.replicas 2) beside kfake and three
## parallel 1 MiB write+fdatasync loops, then the idle cost of 10,000 partitions (RF 3) per node; 3 runs
bench-replicated: build-bench
	./bin/strata-bench bench --nodes 3 --runs 3 --fsync-write-bytes 1048576 --targets strata,kfake,fsync $(BENCH_ARGS)
	./bin/strata-bench bench --nodes 3 --targets idle --idle-partitions 10000 $(BENCH_ARGS)

## kgo-suite: franz-go's own integration suite (pkg/kgo at go.mod's version, copied from the module cache) against
## a fresh node of this tree on KGO_ADDR (default 127.0.0.1:29092), KGO_RUNS times (default 1); KGO_RUN=pattern
## runs part of it. The node has a SASL_PLAINTEXT listener with a SCRAM user too, so TestSCRAMAuth and
## TestSCRAMAuthBadCredentials run (KGO_RUN=SCRAM: only they, ~30 s); share-group and OAUTHBEARER tests skip.
## KGO_SECURITY=sasl_ssl runs the suite over a SASL_SSL listener with the StandardAuthorizer, every client logged in
## as a SCRAM user granted by ACLs; KGO_SECURITY=mtls over an mTLS listener, its client certificate's user granted by ACLs. 3.5 to 6.5 min a run on this machine: not part of `make test` (.ci/run runs it after).
kgo-suite:
	./.ci/kgo-suite

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
