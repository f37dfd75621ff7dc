# The two commands that matter: `make run` and `make test` (README).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Two stamps per pyproject.toml version: what running needs (`make run`: the runtime deps and the
# `llm` extra, no torch or test tools) and the dev stack on top (`make test`, `make lint`).
# The `compat` in the names: a venv installed before the editable installs became compat mode
# (below) is installed again once.
RUN_STAMP := $(VENV)/.installed-run-compat-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-compat-$(SUM)
# Editable installs in compat mode: a .pth path entry, so the project's `shared` package is found
# by the path scan itself. The default mode's finder runs after the path scan, and a folder named
# `shared` in the working directory (a common name) was imported instead of the package.
EDITABLE := --config-settings editable_mode=compat
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install install-run run down status test test-fast lint bench eval clean

install: $(DEV_STAMP)

install-run: $(RUN_STAMP)

# pip's own progress shows (a first install downloads for about a minute): a line per step here,
# and pip's "Collecting ..." lines under it.
$(RUN_STAMP): pyproject.toml
	@echo "make: [1/3] the virtualenv $(VENV)"
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "make: [2/3] pip itself"
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "make: [3/3] agent-memory and its runtime dependencies (a first install: about a minute)"
	$(BIN)/python -m pip install --progress-bar on $(EDITABLE) -e '.[llm]'
	rm -f $(VENV)/.installed-run-*
	touch $(RUN_STAMP)
	@echo "make: installed"

# torch goes first and pinned: torch==2.13.0 resolves to the CPU build the local package index
# holds on disk; left to sentence-transformers' range, pip pulls a newer multi-GB CUDA build.
$(DEV_STAMP): $(RUN_STAMP)
	@echo "make: [1/2] torch (CPU build)"
	$(BIN)/python -m pip install --progress-bar on torch==2.13.0
	@echo "make: [2/2] the dev and test tools"
	$(BIN)/python -m pip install --progress-bar on $(EDITABLE) -e '.[dev]'
	rm -f $(VENV)/.installed-dev-*
	touch $(DEV_STAMP)

run: install-run
	$(BIN)/memory up

down: install-run
	$(BIN)/memory down

status: install-run
	$(BIN)/memory status

test: install
	$(BIN)/python -m pytest

test-fast: install
	$(BIN)/python -m pytest -m "not ray and not slow"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check shared store_worker extract_worker consolidate_worker grpc_gateway integrations web_console
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: install
	$(BIN)/python -m bench
	$(BIN)/python -m bench.consolidate
	$(BIN)/python -m bench.shard_passes
	$(BIN)/python -m bench.cli
	$(BIN)/python -m bench.hooks
	$(BIN)/python -m bench.imports
	$(BIN)/python -m bench.console
	$(BIN)/python -m bench.inject

eval: install
	$(BIN)/python -m tests.recall_quality.run
	$(BIN)/python -m tests.recall_quality.locomo
	$(BIN)/python -m tests.recall_quality.locomo --occurred  # turns dated by occurred_at
	$(BIN)/python -m tests.recall_quality.locomo --typos --no-model  # one slip per question
	$(BIN)/python -m tests.recall_quality.inject  # what reaches the prompt, on and off topic

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
