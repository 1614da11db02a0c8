# Sagüin build, test and benchmark entry points. CI calls `make test` (the
# README's test command) and then `make fuzz` and `make soak` in bounded form.

GO        ?= go
BIN       ?= bin/saguin
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
SOAKTIME  ?= 30s
CONFIG    ?= examples/saguin.yaml

# dist, deb-check and arm-test: see docs/packaging.md.
.PHONY: dist deb-check arm-test build licenses test test-deps vet fuzz bench bench-full bench-deps microbench demo soak nginx clean

build:
	$(GO) build -o $(BIN) ./cmd/saguin

# The licence text `saguin --licenses` prints, regenerated from the packages
# that reach the binary; cmd/saguin's TestLicensesDoNotDrift fails until it is
# run after a dependency changes.
licenses:
	$(GO) run ./scripts/genlicenses -o cmd/saguin/licenses.txt

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1)

# The test command: vet, then every package's tests under the race detector.
# conformance/ builds the binary itself, so nothing needs to be running.
test: test-deps vet
	$(GO) test -race -count=1 ./...

# What the black-box tests drive the broker with: mosquitto_pub/sub and Mosquitto
# itself (a second opinion on plain MQTT). Installed from Debian when missing.
test-deps:
	./scripts/install-test-deps.sh

# Every fuzz target in the tree, each for FUZZTIME.
fuzz:
	./scripts/fuzz-all.sh $(FUZZTIME)

# Microbenchmarks of the hot path (codec, topic matching, stores), with allocations.
microbench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./codec/... ./store/...

# The whole broker beside Mosquitto and mochi-mqtt, every scenario, brokers
# alternated, 3 repetitions: a few minutes on 2 cores. Prints the table and
# writes bench/results/short.{json,md,svg}. BENCHARGS passes flags on, e.g.
# BENCHARGS='-scenarios pub-q1,latency-q1 -brokers saguin,mosquitto'.
bench: bench-deps
	$(GO) run ./bench/cmd/benchrun -profile short $(BENCHARGS)

# The long profile: 10 s windows, 5 repetitions, higher fan-out rate.
bench-full: bench-deps
	$(GO) run ./bench/cmd/benchrun -profile full $(BENCHARGS)

# What the harness runs beside Sagüin: Mosquitto from Debian (with the test
# dependencies) and the mochi-mqtt module the mochi peer is built from.
bench-deps:
	./scripts/install-test-deps.sh
	cd bench/peers/mochi && $(GO) mod download

# The broker on the shipped example configuration: memory storage, tcp 127.0.0.1:1883.
demo: build
	./$(BIN) --config $(CONFIG)

# RFC 0005's nginx arrangement (stream + ws + operations) run by Debian's nginx
# in front of the broker, every answer the RFC lists asserted (docs/operations.md).
# Part of `make test` too, so CI runs it; this runs it alone.
nginx: test-deps
	$(GO) test -count=1 -run 'TestNginx' ./conformance/

# Long-running fault and soak tests (kill -9 under load and the like), bounded by SOAKTIME.
soak:
	SAGUIN_SOAK=$(SOAKTIME) $(GO) test -count=1 -run 'Soak|Fault' -timeout 30m ./...

# The release: saguin for linux amd64, arm64 and armhf (cgo, statically
# linked), the man page, a .deb per architecture made with nfpm, and
# dist/SHA256SUMS. Needs the cross compilers test-deps installs.
dist: test-deps
	./scripts/dist.sh

# lintian on every .deb in dist/, then the amd64 one installed with dpkg on
# this machine, checked, removed and purged. Run as root, on a machine that
# may get a saguin user.
deb-check: dist
	./scripts/deb-check.sh

# The ARM builds under qemu-user-static: go vet for each target, the store
# conformance script and the offsets past 2^32, the kill -9 restart smoke.
arm-test: test-deps
	./scripts/arm-test.sh

clean:
	rm -rf bin dist
