# Run `make help` for the list of targets.
SHELL := bash
.DEFAULT_GOAL := help
UV_RUN := uv run --frozen

.PHONY: help
help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

.PHONY: install
install: ## Install Python deps (uv.lock), redis-server and the Go-built local control plane
	@hack/install.sh

.PHONY: control-plane
control-plane: ## Build (or reuse) the local control-plane binaries; prints their folder
	@hack/build-control-plane.sh

.PHONY: image
image: ## Build (or reuse) the gate and operator images, no Docker daemon; prints their OCI archives' paths, the operator's last
	@hack/image/build-gate.sh
	@hack/image/build.sh

.PHONY: run
run: install ## A local control plane and a real node, Punctual installed with Helm (bundled Redis), the examples
	@$(UV_RUN) python -m localcluster run

.PHONY: test
test: install ## Run all tests: unit, integration (real control plane and Redis), e2e (Helm on a real node); prints each phase's time
	@hack/test.sh

.PHONY: test-unit
test-unit: ## Run the unit tests only (no control plane, no Redis)
	@PUNCTUAL_SKIP_CONTROL_PLANE=1 hack/install.sh
	@$(UV_RUN) pytest -m 'not cluster'

.PHONY: lint
lint: ## ruff (lint and format), mypy --strict, import-linter contracts
	@PUNCTUAL_SKIP_CONTROL_PLANE=1 hack/install.sh
	$(UV_RUN) ruff check .
	$(UV_RUN) ruff format --check .
	$(UV_RUN) mypy
	$(UV_RUN) lint-imports
	$(UV_RUN) hadolint Dockerfile

.PHONY: chart-lint
chart-lint: ## helm lint --strict the chart
	@bin=$$(hack/build-control-plane.sh | tail -1); \
	  $$bin/helm lint --strict charts/punctual --kube-version "$$(cat hack/k8s/VERSION)"

.PHONY: crds
crds: ## Regenerate crds/ from the API models (operator/punctual/api/*_models.py, models.py)
	@$(UV_RUN) punctual crd > crds/scheduledjobs.punctual.dev.yaml
	@$(UV_RUN) punctual crd --kind Calendar > crds/calendars.punctual.dev.yaml
	@cp crds/scheduledjobs.punctual.dev.yaml crds/calendars.punctual.dev.yaml charts/punctual/crds/

.PHONY: compare
compare: install ## Punctual against the CronJob controller (ARGS='-n 20 -m 5 --stress'; ARGS=--suite: the whole comparison, about 20 min)
	@$(UV_RUN) python bench/compare.py $(ARGS)

.PHONY: format
format: ## Apply ruff's fixes and formatting
	$(UV_RUN) ruff check --fix .
	$(UV_RUN) ruff format .

.PHONY: bench
bench: ## Benchmarks: Punctual's slot loop against a naive sleep loop, next-slot cost, HTTP client CPU
	@PUNCTUAL_SKIP_CONTROL_PLANE=1 hack/install.sh
	@$(UV_RUN) python bench/loop_drift.py
	@$(UV_RUN) python bench/next_slot.py
	@$(UV_RUN) python bench/http_client.py

.PHONY: bench-scale
bench-scale: install ## At scale on the local control plane + Redis: lateness, costs, restarts, bursts (ARGS=--help)
	@$(UV_RUN) --with matplotlib python bench/scale.py $(ARGS)

.PHONY: chaos
chaos: install ## Chaos: 3 replicas, 50 jobs every 1s, a random replica SIGKILLed every 15s for 5 min (ARGS=--backend kubernetes ...)
	@$(UV_RUN) python bench/chaos.py $(ARGS)

.PHONY: overload
overload: install ## Overload: lateness of 100 valid jobs beside 1,000 invalid ones, against 100 alone (ARGS=...)
	@$(UV_RUN) python bench/overload.py $(ARGS)

.PHONY: bench-queues
bench-queues: install ## Queues: scheduled time → the worker's task started, per framework, beside Celery beat's own, one broker (ARGS=--help)
	@$(UV_RUN) python bench/queue_lateness.py $(ARGS)

.PHONY: bench-tenants
bench-tenants: install ## Tenants: B's every-second jobs alone, then while tenant A runs every attack at once: lateness, duplicates, lost, RSS, B's stream (ARGS=--help)
	@$(UV_RUN) python bench/tenants.py $(ARGS)
