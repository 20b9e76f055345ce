# openstack-sync: make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
# Where wazero keeps compiled plugins between processes.
export OPENSTACK_SYNC_CACHE_DIR ?= $(CURDIR)/.cache/wazero

.PHONY: help build plugins image test lint e2e demo bench bench-native bench-micro chart-update mutate fuzz release

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# Static (CGO_ENABLED=0) as the image builds it (hack/build-image.sh), so what the benchmark runs
# starts as production's binary does: no dynamic loader at every process start. Symbols are kept
# here for perf and pprof; the image strips them.
build: ## build the host binary to bin/openstack-sync, static as in the image (no test fake in it: the demo is bin/openstack-sync-dev)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/openstack-sync ./host/cmd/openstack-sync

plugins: ## build every plugin to bin/plugins/<name>.wasm (reproducible: -trimpath, stripped)
	hack/build-plugins.sh $(BIN)/plugins

image: ## the operator image without a container engine, as an OCI layout in bin/image/layout (docs/operators/install.md)
	hack/build-image.sh $(BIN)/image

# The release's version: the tag at HEAD, else a Go pseudo-version of HEAD. Tag a release as both
# vX.Y.Z and pdk/vX.Y.Z (the PDK is a module in pdk/), then make release VERSION=vX.Y.Z.
VERSION ?= $(shell git describe --tags --exact-match --match 'v*' 2>/dev/null || \
	TZ=UTC git log -1 --format='v0.0.0-%cd-%h' --date=format-local:%Y%m%d%H%M%S --abbrev=12)
RELEASE_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64
release: ## reproducible, checksummed archives in bin/release: the host and dev binaries per platform, the PDK source, the Go modules as a module proxy (docs/writing-plugins.md)
	$(GO) run ./hack/release --version $(VERSION) --out $(BIN)/release --platforms $(RELEASE_PLATFORMS)

test: ## the unit and host tiers: every Go module, the chart when helm is available
	hack/test.sh

lint: ## gofmt, go mod tidy, go vet (native and wasip1), staticcheck; the PDK API baseline; stale doc references
	hack/lint.sh

fuzz: ## every fuzz target run by the fuzzing engine for FUZZTIME each (default 3s), not only its seed corpus
	hack/fuzz.sh

mutate: ## break each framework safety rule in a temporary copy and check a test fails (docs/reliability.md)
	nice $(GO) run ./hack/mutate

e2e: ## the real-parts tier: kube-apiserver, etcd, shell-operator, helm, Keystone, Neutron, Ironic
	hack/e2e.sh

demo: build plugins ## complete hook passes of bin/openstack-sync against an in-process cloud and Kubernetes seeded from examples/
	$(GO) build -trimpath -o $(BIN)/openstack-sync-dev ./host/cmd/openstack-sync-dev
	$(BIN)/openstack-sync-dev demo --host $(BIN)/openstack-sync --plugins $(BIN)/plugins --examples examples

# A quick reduced matrix by default; docs/benchmarks.md gives the full one, e.g.
#   make bench BENCH_ARGS='--sizes 1,100,1000,5000 --groups 1000x10 --runs 5 --native bin/native/openstack-sync-native'
BENCH_ARGS ?= --sizes 1,100 --runs 3
bench: build plugins ## whole-hook benchmark (docs/benchmarks.md): hook processes vs a real kube-apiserver and the in-process cloud
	$(GO) build -o $(BIN)/openstack-sync-bench ./host/cmd/openstack-sync-bench
	nice $(BIN)/openstack-sync-bench --host $(BIN)/openstack-sync --plugins-dir $(BIN)/plugins $(BENCH_ARGS)

bench-native: ## the native test host and native plugin builds the whole-hook benchmark compares against (bin/native)
	hack/build-native-plugins.sh $(BIN)/native

bench-micro: ## the micro-benchmarks (wasm host, proxy, planner, plugins)
	nice $(GO) test ./host/internal/wasm/ -run '^$$' -bench . -benchtime 2s
	nice $(GO) test ./host/internal/openstack/ ./host/internal/planner/ -run '^$$' -bench .
	cd plugins-wasm && nice $(GO) test ./... -run '^$$' -bench ConvergedGroup

chart-update: ## rewrite the chart goldens and copy crds/ into the chart (then review the diff)
	$(GO) test -count=1 ./test/chart -update
