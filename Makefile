# Plumb's build. `make` alone prints the targets.
.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash -o pipefail

MODULES     := api pkg source-controller render-controller sync-controller notification-controller image-controller e2e cli ui deploy
CONTROLLERS := source-controller render-controller sync-controller notification-controller image-controller
# Programs built beside the controllers, the same way (bin/<name> from ./<name>).
PROGRAMS    := $(CONTROLLERS) ui
ROOT        := $(CURDIR)
BIN         := $(ROOT)/bin
K8S_BIN     := $(BIN)/k8s
CONTROLLER_GEN := $(BIN)/controller-gen
GEN_TOOLS   := $(ROOT)/hack/tools/gen
# Tests start the control plane from here (envtest's convention).
export KUBEBUILDER_ASSETS := $(K8S_BIN)
# Every go command here builds without kustomize's Go-plugin loader:
# render- and source-controller run kustomize with plugins disabled
# (pkg/render), and a program that links package plugin keeps every
# exported method and a dynamic symbol table of the whole program when
# cgo links it: some 40 MB of binary and 8-25 MiB of resident memory per
# controller that the images (CGO_ENABLED=0) never had
# (docs/bench/helm-release.md, "Memory, session 2026-12-06"). Exported, so
# the scripts and the tests that build binaries (e2e) inherit it; the
# image build (pkg/imagebuild) passes the same tag.
NO_GO_PLUGINS := kustomize_disable_go_plugin_support
export GOFLAGS := $(strip $(GOFLAGS) -tags=$(NO_GO_PLUGINS))
# Module patterns for the go command in workspace mode.
PKGS        := $(addprefix ./,$(addsuffix /...,$(MODULES)))
# The order make test runs the packages in. The go command starts them in
# the order given, two at a time on a 2-core machine. e2e and e2e/localenv
# go first: their real-node stories wait on Pods far more than they
# compute, so beside the other packages' CPU-bound tests they cost little
# wall time, where listed last they ran alone at the end, one after the
# other behind the machine's one node lock (docs/design/node.md, "Time in
# the tests").
TEST_PKGS   := ./e2e ./e2e/localenv $(addprefix ./,$(addsuffix /...,$(MODULES)))
TEST_FLAGS  ?= -count=1 -timeout=45m
TEST_RUN    ?=

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build the five controllers, the ui server and the plumb CLI into bin/.
	@for c in $(PROGRAMS); do echo ">> go build $$c"; go build -o $(BIN)/$$c ./$$c || exit 1; done
	@echo ">> go build plumb"; go build -o $(BIN)/plumb ./cli

# `make images`: the six programs' images from Go modules, no Docker
# (pkg/imagebuild; docs/images.md). The defaults make a rebuild of one
# commit give the same digests: its describe, hash and time. The source
# label is the origin remote's https URL without any credentials in it, and
# is left out when the clone has none (a guessed URL would mislead).
IMAGE_REGISTRY    ?=
VERSION           ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT            ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
IMAGE_SOURCE      ?= $(shell git remote get-url origin 2>/dev/null | grep '^https://' | sed -E 's#^https://[^/@]*@#https://#')
IMAGE_PLATFORMS   ?= linux/amd64,linux/arm64

# The example config-management plugin's image, the sidecar of
# deploy/components/plugins (imagebuild.PluginPrograms).
PLUGIN_IMAGES     := plumb-plugin-envsubst

.PHONY: images
images: ## Build the six images and the example plugin's (OCI index, linux/amd64 and linux/arm64) without Docker; push to IMAGE_REGISTRY=host/path, else OCI layouts in bin/images/.
	go run ./pkg/imagebuild/cmd/images -dir $(ROOT) -out $(BIN)/images -registry '$(IMAGE_REGISTRY)' \
		-version '$(VERSION)' -commit '$(COMMIT)' -created '$(SOURCE_DATE_EPOCH)' -source '$(IMAGE_SOURCE)' \
		-platforms '$(IMAGE_PLATFORMS)' $(PROGRAMS) $(PLUGIN_IMAGES)

.PHONY: example-images
example-images: ## Build the example app's images (deploy/examples/images: web, hook), as images does; tagged with the sample's version.
	go run ./pkg/imagebuild/cmd/images -dir $(ROOT) -out $(BIN)/images -registry '$(IMAGE_REGISTRY)' \
		-version '$(VERSION)' -commit '$(COMMIT)' -created '$(SOURCE_DATE_EPOCH)' -source '$(IMAGE_SOURCE)' \
		-platforms '$(IMAGE_PLATFORMS)' examples/web examples/hook

.PHONY: envtest-assets
envtest-assets: ## Build etcd and kube-apiserver from Go modules into bin/k8s (cached outside the clone).
	@hack/controlplane.sh $(K8S_BIN) etcd kube-apiserver

.PHONY: controlplane-assets
controlplane-assets: ## Also build kube-controller-manager (for `make run` and e2e).
	@hack/controlplane.sh $(K8S_BIN) etcd kube-apiserver kube-controller-manager

.PHONY: node-assets
node-assets: ## Build a real node (kubelet, kube-proxy, kube-scheduler, containerd, runc, crictl, CNI plugins, CoreDNS, kube-router) from Go modules into bin/k8s and bin/node; Debian's iptables, ipset and libseccomp-dev when missing.
	@if ! command -v iptables >/dev/null || ! command -v conntrack >/dev/null || ! command -v ipset >/dev/null || [ ! -e /usr/include/seccomp.h ]; then \
		echo ">> installing Debian's iptables, conntrack, ipset and libseccomp-dev (apt-get)"; \
		if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y iptables conntrack ipset libseccomp-dev; fi
	@hack/controlplane.sh $(K8S_BIN) kubelet kube-proxy kube-scheduler
	@hack/node.sh $(BIN)/node

# The real-node tests (e2e/node_test.go, e2e/localenv/node_test.go) need
# root: as root, the tests build (once, cached) and link the node.
NODE_FOR_TESTS := $(if $(filter 0,$(shell id -u)),node-assets)

# The UI's browser tests drive Debian's chromium (ui/browsertest).
CHROMIUM    := /usr/bin/chromium

.PHONY: chromium
chromium: $(CHROMIUM) ## Install Debian's chromium for the UI's browser tests, when it is missing.

$(CHROMIUM):
	@echo ">> installing Debian's chromium (apt-get)"
	@if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y chromium

##@ Run

.PHONY: run
run: ## Build what is missing, then run the whole suite on 127.0.0.1 with a sample app; Ctrl-C stops it. Pods run on a real kubelet when one can start here, else on the pod simulator; NODE=real or NODE=sim chooses (docs/design/node.md).
	@NODE=$(NODE) hack/run.sh $(RUN_ARGS)

.PHONY: starts
starts: ## Start the suite STARTS times in a row (default 50), each bounded, and report how many came up whole.
	@hack/starts.sh $(or $(STARTS),50)

$(CONTROLLER_GEN): $(GEN_TOOLS)/go.mod
	@echo ">> building controller-gen"
	@cd $(GEN_TOOLS) && GOWORK=off go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

STATICCHECK := $(BIN)/staticcheck
$(STATICCHECK): $(GEN_TOOLS)/go.mod
	@echo ">> building staticcheck"
	@cd $(GEN_TOOLS) && GOWORK=off go build -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

# goimports groups imports as the code does (`bin/goimports -local
# plumb.dev -w FILES`); nothing in verify runs it, since generated files
# keep controller-gen's grouping.
GOIMPORTS := $(BIN)/goimports
.PHONY: goimports
goimports: $(GOIMPORTS) ## Build goimports (hack/tools/gen) into bin/.
$(GOIMPORTS): $(GEN_TOOLS)/go.mod
	@echo ">> building goimports"
	@cd $(GEN_TOOLS) && GOWORK=off go build -o $(GOIMPORTS) golang.org/x/tools/cmd/goimports

KUSTOMIZE := $(BIN)/kustomize
$(KUSTOMIZE): $(GEN_TOOLS)/go.mod
	@echo ">> building kustomize"
	@cd $(GEN_TOOLS) && GOWORK=off go build -o $(KUSTOMIZE) sigs.k8s.io/kustomize/kustomize/v5

.PHONY: helm-cli
helm-cli: ## Build the helm CLI from Go modules (hack/tools/helm) and link it into bin/ (cached outside the clone).
	@hack/helm.sh $(BIN)

##@ Generate

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and the kinds' field methods (api/internal/kindgen) for the APIs.
	@cd api && $(CONTROLLER_GEN) object paths=./...
	@cd api && go run ./internal/kindgen ./*/v*/

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs into deploy/crds, and docs/api/porting-from-flux.md from them.
	@cd api && $(CONTROLLER_GEN) crd:crdVersions=v1 paths=./... output:crd:artifacts:config=$(ROOT)/deploy/crds
	@cd api && go run ./internal/portingdoc

##@ Check

.PHONY: fmt
fmt: ## gofmt every module.
	@gofmt -l -w $(MODULES) hack

.PHONY: vet
vet: ## go vet every module.
	@go vet $(PKGS)

.PHONY: tidy
tidy: ## go mod tidy every module (and the tools modules).
	@for m in $(MODULES) hack/tools/gen hack/tools/controlplane hack/tools/helm; do (cd $$m && GOWORK=off go mod tidy) || exit 1; done

.PHONY: lint
lint: $(STATICCHECK) ## staticcheck every module; fails on any finding.
	@$(STATICCHECK) $(PKGS)

.PHONY: docs-check
docs-check: ## Fail when the docs name a flag, kind or reason the code does not have (api/reasons_test.go, cli/internal/docstest).
	@go test -count=1 ./api ./cli/internal/docstest

.PHONY: verify
verify: generate manifests fmt tidy vet lint docs-check ## Regenerate, format, tidy, lint and check the docs against the code, then fail if the tree changed.
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "verify: the tree is not clean after regenerating; commit these changes:"; \
		git status --porcelain; git --no-pager diff --stat; exit 1; fi

##@ Test

.PHONY: test
test: controlplane-assets helm-cli $(CHROMIUM) $(NODE_FOR_TESTS) ## Run every module's tests against a real kube-apiserver, etcd and NATS (e2e/ also kube-controller-manager), the helm CLI (sync-controller's adoption test), the UI's in chromium.
	go test $(TEST_FLAGS) $(if $(TEST_RUN),-run '$(TEST_RUN)') $(TEST_PKGS)

.PHONY: e2e
e2e: controlplane-assets helm-cli $(CHROMIUM) $(NODE_FOR_TESTS) ## Run only the end-to-end tests (the four controllers as processes, a real git client, webhooks, a Slack stand-in).
	go test -count=1 -timeout=20m -v ./e2e/...

# Each bench-<name> target runs the program <module>/bench/<name> of the
# module it measures (pkg/bench/{pack,helm,render}, sync-controller/bench/sync,
# ui/bench/ui, e2e/bench/fleet, e2e/bench/helmrelease, e2e/bench/image); bench-source runs
# pkg/bench/pack.
.PHONY: bench bench-source
bench: bench-source
bench: bench-sync
bench-source: ## Pack a generated 10,000-file tree with pkg/artifact and with git archive | gzip -6; print a table.
	go run ./pkg/bench/pack -files 10000 -runs 5

.PHONY: bench-sync
bench-sync: envtest-assets ## sync-controller vs a bare server-side-apply loop on 1,000 objects (initial sync, also with a real render of the targetNamespace and images-patch shapes; no-op resync, drift, memory); print a table.
	go run ./sync-controller/bench/sync -objects 1000 -runs 5

.PHONY: bench-helm
bench: bench-helm
bench-helm: helm-cli ## pkg/helmrender vs helm template on a real-world-sized chart (time, CPU, memory, identical objects); print a table.
	@go build -o $(BIN)/bench-helm ./pkg/bench/helm
	$(BIN)/bench-helm -helm $(BIN)/helm -runs 5

.PHONY: bench-render
bench: bench-render
bench-render: $(KUSTOMIZE) ## pkg/render vs the kustomize CLI on a generated 1,000-object kustomization with an overlay (time, memory); print a table.
	@go build -o $(BIN)/bench-render ./pkg/bench/render
	$(BIN)/bench-render -kustomize $(KUSTOMIZE) -objects 1000 -runs 5

.PHONY: bench-ui
bench: bench-ui
bench-ui: envtest-assets $(CHROMIUM) ## The UI's overview with 1,000 Kustomizations in chromium: time to the first screen of rows vs the API's first page; print a table.
	go run ./ui/bench/ui -kustomizations 1000 -namespaces 20 -runs 10

.PHONY: bench-fleet
bench: bench-fleet
bench-fleet: controlplane-assets ## N Kustomizations of 4 objects (N = 100, 500, 1,000) with the four controllers as processes vs a bare server-side-apply loop; one of 1,000 objects; drift at fleet scale; print a table.
	@go build -o $(BIN)/ ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller
	@go build -o $(BIN)/bench-fleet ./e2e/bench/fleet
	$(BIN)/bench-fleet $(FLEET_ARGS)

# RESTART_N is the fleet size of bench-restart: 1000, or 5000 for the
# larger fleet (docs/bench/fleet.md, "Restarts").
RESTART_N ?= 1000
.PHONY: bench-restart
bench-restart: controlplane-assets ## A fleet of RESTART_N (1,000) Kustomizations at rest: restart sync-, render- and source-controller one at a time; requests until steady, objects re-applied, hooks re-run, prunes, drift at readiness; print a table.
	@go build -o $(BIN)/ ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller
	@go build -o $(BIN)/bench-fleet ./e2e/bench/fleet
	$(BIN)/bench-fleet -restart -n $(RESTART_N) -single-objects 0 $(FLEET_ARGS)

# The soak (issue 45, item 3): DURATION of a fleet of SOAK_N at rest with
# a commit a minute and five foreign edits a second; the curves go to
# SOAK_OUT (docs/bench/fleet.md, "Soak").
DURATION ?= 1h
SOAK_N ?= 1000
SOAK_OUT ?= docs/bench/soak
.PHONY: soak
soak: controlplane-assets ## A fleet of SOAK_N (1,000) Kustomizations for DURATION (1h): a commit a minute, five foreign edits a second; each controller's heap, RSS, goroutines, open files and error lines, the API server's watchers and drift p99 every minute; a table, SOAK_OUT/soak.csv and soak.svg, a verdict.
	@go build -o $(BIN)/ ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller
	@go build -o $(BIN)/bench-fleet ./e2e/bench/fleet
	$(BIN)/bench-fleet -soak $(DURATION) -n $(SOAK_N) -single-objects 0 -soak-out $(SOAK_OUT) $(FLEET_ARGS)

# The NATS outage (issue 45, item 2): a fleet of OUTAGE_N at rest, NATS
# stopped for NATS_OUTAGE while foreign edits and their alerts happen.
OUTAGE_N ?= 200
NATS_OUTAGE ?= 5m
.PHONY: bench-outage
bench-outage: controlplane-assets ## A fleet of OUTAGE_N (200) Kustomizations at rest with NATS stopped for NATS_OUTAGE (5m) while foreign edits happen: drift corrected during it, events buffered and dropped, alerts delivered after it, each controller's pid; print a table.
	@go build -o $(BIN)/ ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller
	@go build -o $(BIN)/bench-fleet ./e2e/bench/fleet
	$(BIN)/bench-fleet -nats-outage $(NATS_OUTAGE) -n $(OUTAGE_N) -single-objects 0 $(FLEET_ARGS)

.PHONY: helm-controller
helm-controller: ## Build Flux's helm-controller from its Go module (hack/helm-controller.sh) and link it and Flux's CRDs into bin/ (cached outside the clone).
	@hack/helm-controller.sh $(BIN)

# Not part of `make bench`: it builds Flux's helm-controller, minutes of CPU.
.PHONY: bench-helmrelease
bench-helmrelease: controlplane-assets helm-controller ## N HelmReleases of one chart with Plumb's controllers and with Flux's helm-controller on one control plane (install, upgrade, no-op reconcile, drift, memory) and a bare server-side-apply floor; print a table.
	@go build -o $(BIN)/ ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller
	@go build -o $(BIN)/bench-helmrelease ./e2e/bench/helmrelease
	$(BIN)/bench-helmrelease $(HELMRELEASE_ARGS)

# Not part of `make bench`: it starts the whole suite, as `make run` does.
.PHONY: bench-image
bench-image: controlplane-assets ## A new image tag in the local registry to the sample's Deployment (registry webhook, scan, ImagePolicy, signed commit, render, apply), N=10 tags, once without the webhook, and a floor doing the same work directly; print a table.
	@go build -o $(BIN)/ ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller
	@go build -o $(BIN)/bench-image ./e2e/bench/image
	$(BIN)/bench-image $(IMAGE_ARGS)

.PHONY: clean
clean: ## Remove bin/ (the control-plane cache outside the clone stays).
	rm -rf $(BIN)
