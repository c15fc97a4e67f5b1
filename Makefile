# The two quickstart commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: setup demo test lint clean

$(BIN)/arena: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/arena

setup: $(BIN)/arena

demo: setup
	$(BIN)/arena demo

test: setup
	$(BIN)/ruff check arena tests
	$(BIN)/mypy
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check arena tests
	$(BIN)/ruff format --check arena tests
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
