# The front door. Every target creates .venv and installs what it needs when missing:
# the demo only the package, the checks and benchmarks the dev tools too.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime
MUTMUT  := $(VENV)/.mutmut
PIP     := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: test demo bench stress mutate bench-smoke lint typecheck architecture unit clean

test: $(STAMP) lint typecheck architecture unit bench-smoke  ## everything CI checks

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts

typecheck: $(STAMP)
	$(BIN)/mypy

architecture: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)  ## one pytest worker per core (pytest-xdist): the suite waits on processes as much as it computes
	$(BIN)/pytest -n auto

bench-smoke: $(STAMP)  ## the bench at tiny sizes, once, so it cannot rot
	$(BIN)/python scripts/bench.py --smoke > /dev/null

demo: $(RUNTIME)  ## the main job on a sample agent: no API key, no network
	$(BIN)/python scripts/demo.py

bench: $(STAMP)  ## figures, not assertions
	$(BIN)/python scripts/bench.py

stress: $(STAMP)  ## durability figures: racing appends, random SIGKILLs (also during --archive), overlapping runs
	$(BIN)/python scripts/stress.py

mutate: $(STAMP) $(MUTMUT)  ## mutation score of domain/ and the gc use case, fast tests only (docs/testing.md); not in CI
	rm -rf mutants
	$(BIN)/mutmut run
	$(BIN)/python scripts/mutation_scores.py

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "axe needs Python 3.11 or newer (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(RUNTIME): pyproject.toml | $(BIN)/python  ## the package and its run-time dependencies
	$(PIP) -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml | $(BIN)/python  ## the package and the dev tools (ruff, mypy, ...)
	$(PIP) -e '.[dev]'
	touch $(RUNTIME) $(STAMP)

$(MUTMUT): pyproject.toml | $(STAMP)  ## mutmut, for `make mutate` only
	$(PIP) -e '.[dev,mutation]'
	touch $(MUTMUT)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build src/*.egg-info mutants
