# The front door. Every target creates .venv and installs what it needs when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo bench stress bench-smoke lint typecheck architecture unit clean

test: $(STAMP) lint typecheck architecture unit bench-smoke  ## everything CI checks

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts

typecheck: $(STAMP)
	$(BIN)/mypy

architecture: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest

bench-smoke: $(STAMP)  ## the bench at tiny sizes, once, so it cannot rot
	$(BIN)/python scripts/bench.py --smoke > /dev/null

demo: $(STAMP)  ## the main job on a sample agent: no API key, no network
	$(BIN)/python scripts/demo.py

bench: $(STAMP)  ## figures, not assertions
	$(BIN)/python scripts/bench.py

stress: $(STAMP)  ## durability figures: racing appends, random SIGKILLs (also during --archive), overlapping runs
	$(BIN)/python scripts/stress.py

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "axe needs Python 3.11 or newer (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build src/*.egg-info
