# The two commands that matter: `make run` and `make test` (README).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Two stamps per pyproject.toml version: what running needs (`make run`: the runtime deps and the
# `llm` extra, no torch or test tools) and the dev stack on top (`make test`, `make lint`).
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install install-run run down status test test-fast lint bench eval clean

install: $(DEV_STAMP)

install-run: $(RUN_STAMP)

# -qq on the editable installs: errors still show, setuptools' editable-mode chatter does not.
$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --quiet -e '.[llm]'
	rm -f $(VENV)/.installed-run-*
	touch $(RUN_STAMP)

# torch goes first and pinned: torch==2.13.0 resolves to the CPU build the local package index
# holds on disk; left to sentence-transformers' range, pip pulls a newer multi-GB CUDA build.
$(DEV_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet --quiet -e '.[dev]'
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
	$(BIN)/ruff format --check shared store_worker extract_worker consolidate_worker grpc_gateway integrations
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: install
	$(BIN)/python -m bench
	$(BIN)/python -m bench.consolidate
	$(BIN)/python -m bench.shard_passes
	$(BIN)/python -m bench.cli

eval: install
	$(BIN)/python -m tests.recall_quality.run
	$(BIN)/python -m tests.recall_quality.locomo
	$(BIN)/python -m tests.recall_quality.locomo --occurred  # turns dated by occurred_at
	$(BIN)/python -m tests.recall_quality.locomo --typos --no-model  # one slip per question

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
