# The two commands that matter: `make run` and `make test` (README).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install run down status test test-fast lint typecheck bench eval clean

install: $(STAMP)

# torch goes first and pinned: torch==2.13.0 resolves to the CPU build the local package index
# holds on disk; left to sentence-transformers' range, pip pulls a newer multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

run: install
	$(BIN)/memory up

down: install
	$(BIN)/memory down

status: install
	$(BIN)/memory status

test: install
	$(BIN)/python -m pytest

test-fast: install
	$(BIN)/python -m pytest -m "not ray and not slow"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check shared store_worker extract_worker consolidate_worker grpc_gateway
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: install
	$(BIN)/python -m bench
	$(BIN)/python -m bench.consolidate

eval: install
	$(BIN)/python -m tests.recall_quality.run
	$(BIN)/python -m tests.recall_quality.locomo
	$(BIN)/python -m tests.recall_quality.locomo --occurred  # turns dated by occurred_at

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
