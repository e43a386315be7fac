# homing: `make test` runs every test: on local control planes built from their Go modules
# (`make test-local`), then on a kind cluster built here (`make test-kind`, docs/kind.md);
# `make demo` tells the evict-and-return story.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: all venv binaries prepare kind-images test lint test-local test-kind test-engine test-integration bench bench-tidal bench-demo bench-scale bench-takeover lock dashboard-snapshot demo demo-binaries crds config-reference manifests clean docker images kind-up kind-down kind-install kind-install-helm kind-release kind-e2e kind-pulls release

all: test

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

binaries:
	bash e2e/build-binaries.sh
	bash e2e/build-volcano.sh
	bash e2e/build-mindcluster.sh
	bash e2e/build-helm.sh
	bash e2e/build-frameworks.sh

test: prepare test-local test-kind

# What both halves build, side by side (on a new machine the two take about half an hour each
# and overlap well: Go's downloads and links beside the other's compiles); a no-op once built.
prepare: venv
	$(MAKE) --no-print-directory -j2 binaries kind-images

# kind's node image (pulled or built; build-node.sh builds the kind CLI it reads the pin from) and
# homing's image, without a cluster.
kind-images: images
	bash e2e/kind/build-node.sh >/dev/null

# Static checks (docs/dev/static-checks.md): ruff over the Python trees, mypy --strict over the
# files pyproject.toml lists ([tool.mypy]); any finding fails `make test`.
lint: venv
	$(PY) -m ruff check operator tests bench e2e
	$(PY) -m mypy

test-local: venv binaries lint
	$(PY) -m pytest -q -p no:cacheprovider

# The real cluster: Docker, images and kind; the suite through its kubeconfig; homing installed by
# kubectl apply -k and by helm, real pulls, Volcano's tide; deleted after unless KIND_KEEP=1.
test-kind: venv binaries
	bash e2e/kind/stage.sh

test-engine: venv
	$(PY) -m pytest -q tests/engine

test-integration: venv binaries
	$(PY) -m pytest -q tests/integration

bench: venv
	$(PY) bench/engine.py

bench-tidal: venv binaries
	$(PY) bench/tidal.py

# The demo's story DEMO_RUNS times per variant, both variants from each run's dawn layout.
DEMO_RUNS ?= 10
bench-demo: venv demo-binaries
	$(PY) bench/demo.py --runs $(DEMO_RUNS)

# One operator at 500 / 2,000 / 5,000 nodes (SCALE_STEPS=500 for the first only),
# then the same steps through a webhook that does nothing, in Python and in Go: the machine's
# floor (scale-floor.json).
SCALE_STEPS ?= 500,2000,5000
bench-scale: venv binaries
	$(PY) bench/scale.py --steps $(SCALE_STEPS)
	$(PY) bench/scale.py --steps $(SCALE_STEPS) --webhook noop
	$(PY) bench/scale.py --steps $(SCALE_STEPS) --webhook noop-go

# docs/images/dashboard.png: the monitoring dashboard drawn from a short real run (matplotlib).
dashboard-snapshot: venv binaries
	$(PY) -m pip install --quiet -e '.[test,dashboard]'
	$(PY) bench/dashboard_snapshot.py

# The writer's takeover when the leading replica is killed (bench/results/takeover.json).
bench-takeover: venv binaries
	$(PY) bench/takeover.py

# The image's Python dependencies, pinned with every file's hash (Dockerfile: --require-hashes).
lock: venv
	$(PY) -m pip install -q -e '.[lock]'  # editable, as make venv installs it: tests keep reading this tree
	$(PY) -m piptools compile --quiet --generate-hashes --strip-extras --allow-unsafe --all-build-deps \
		--no-emit-index-url --no-emit-find-links --output-file requirements.lock pyproject.toml

# The demo runs a local control plane, kwok and Volcano: it builds those alone (not Helm, the
# frameworks nor MindCluster's plugin, which `binaries` adds for the tests). The control plane's
# programs are built by the demo itself, only those it runs (cluster.VOLCANO_CONTROL_PLANE).
demo-binaries:
	bash e2e/build-volcano.sh

demo: venv demo-binaries
	$(PY) e2e/demo.py

# The CRD, and the chart's copy of it (Helm installs charts/homing/crds/ before the templates).
crds: venv
	$(PY) -m homing.tools.gencrd crds/placementmemory.yaml
	$(PY) -m homing.tools.gencrd charts/homing/crds/placementmemories.homing.io.yaml

# docs/configuration.md: every setting, generated from the settings model (operator/homing/config.py).
config-reference: venv
	$(PY) -m homing.tools.genconfig docs/configuration.md

# The generated part of manifests/ (the webhook configuration the operator writes). The Helm
# chart is written by hand; tests/integration/test_helm_chart.py holds it to manifests/.
manifests: venv
	$(PY) -m homing.tools.genmanifests manifests/base

# Docker, the homing image and a kind cluster, all from local parts (docs/kind.md).
docker:
	bash e2e/docker/ensure-docker.sh

images: docker
	bash e2e/images/build-images.sh

# A release's artifacts in dist/ (docs/dev/release.md): the image for each of PLATFORMS as a
# `docker save` tarball (arm64 built under QEMU user emulation), an SBOM per image, the chart,
# install.yaml and SHA256SUMS. VERSION must be pyproject.toml's (FORCE_VERSION=1: another, for a
# test or candidate build). Any Docker daemon will do (no privileged containers): `make docker`
# only when none answers. No venv: e2e/release/release.py needs only Python 3.11's own library.
PLATFORMS ?= linux/amd64,linux/arm64
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z [PLATFORMS=linux/amd64] [FORCE_VERSION=1]" >&2; exit 2; }
	@docker info >/dev/null 2>&1 || $(MAKE) --no-print-directory docker
	bash e2e/build-helm.sh
	$(PYTHON) e2e/release/release.py $(VERSION) --platforms '$(PLATFORMS)' $(if $(FORCE_VERSION),--force-version)

# Four nodes (one control plane) on a node image built here; KUBECONFIG=e2e/.kind/kubeconfig.
kind-up: images
	bash e2e/kind/kind-up.sh

# homing installed on it as a user would (kind load, kubectl apply -k e2e/kind/install), checked.
kind-install: kind-up images
	bash e2e/kind/install.sh

# Real image pulls: a local registry, a 2 GiB test image, one rank started fresh, back home
# (no pull) and moved (a pull), timed from the kubelet's events (bench/results/kind-pulls.json).
kind-pulls: kind-install venv
	bash e2e/kind/pulls.sh

# Volcano from its own manifest with images built here, configured for the tidal day (e2e/kind/volcano-up.sh).
kind-volcano: kind-up images
	bash e2e/kind/volcano-up.sh

# The tidal story on real kubelets: a Volcano gang preempted by inference, back home at scale-in
# (bench/results/kind-tidal.json; KIND_TIDAL_COMPARE=1 also runs it without homing).
kind-tidal: kind-install kind-volcano venv
	$(PY) e2e/kind/tidal.py $${KIND_TIDAL_COMPARE:+--compare}

# The same with `helm install` of charts/homing (replaces the kubectl install; kind-install undoes it).
kind-install-helm: kind-up images
	bash e2e/build-helm.sh
	bash e2e/kind/install.sh helm

# tests/integration against the kind cluster through its kubeconfig (e2e/kind/e2e.sh, docs/kind.md):
# the operator runs here, its webhook (and the frameworks' and the tests' own) reached from the
# nodes at the kind network's gateway; pods the tests bind themselves name no scheduler of kind's.
# KIND_CLUSTER=<name>: the same suite on a kind cluster of your own (none is made).
# homing from the release's chart package and install.yaml alone (make release's, no images),
# two releases side by side, doctor, uninstall (e2e/kind/release-install.sh); replaces the install.
kind-release: kind-up images venv binaries
	bash e2e/build-helm.sh
	bash e2e/kind/release-install.sh

kind-e2e: $(if $(filter-out homing,$(KIND_CLUSTER)),,kind-up) venv binaries
	bash e2e/kind/e2e.sh tests/integration

kind-down:
	bash e2e/kind/kind-down.sh

clean:
	rm -rf $(VENV) e2e/.bin .pytest_cache .hypothesis .mypy_cache .ruff_cache
