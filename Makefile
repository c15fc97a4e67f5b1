# The two quickstart commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# CI adds the optional Ray extra (EXTRAS=dev,ray,server) so the Ray executor tests run;
# the server extra (FastAPI, SQLAlchemy, ...) is part of the default set-up.
EXTRAS ?= dev,server
# The suite's workers (pytest-xdist): one per core. Tests sharing a module-scoped fixture
# stay on one worker (tests/conftest.py), so `--dist loadgroup`.
TEST_WORKERS ?= auto
PYTEST := $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup

.PHONY: setup demo test test-fast lint clean engine-compiled

# Without Debian's python3-venv (no ensurepip), the venv is made without pip and the
# system pip installs pip into it.
$(BIN)/arena: pyproject.toml
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV) && $(PYTHON) -m venv --without-pip $(VENV) \
		&& $(PYTHON) -m pip --python $(BIN)/python install --quiet pip; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(BIN)/arena

# The rules engine's C extension, built when its sources change; without a C compiler (or
# if the build fails) the pure-Python engine runs instead: the same games, ~8x slower.
ENGINE_STAMP := arena/engine/_compiled/SOURCE
$(ENGINE_STAMP): arena/engine/_game.c arena/engine/game.py arena/engine/tables.py | $(BIN)/arena
	$(BIN)/python -m arena.engine.build_compiled \
		|| echo "note: the pure-Python rules engine runs instead (same games, slower)"

setup: $(BIN)/arena $(ENGINE_STAMP)

demo: setup
	$(BIN)/arena demo

test: setup
	$(BIN)/ruff check arena tests
	$(BIN)/mypy
	$(PYTEST)

# The inner loop: lint and the tests not marked slow (minutes instead of ~20).
test-fast: setup
	$(BIN)/ruff check arena tests
	$(BIN)/mypy
	$(PYTEST) -m "not slow" -q

lint: setup
	$(BIN)/ruff check arena tests
	$(BIN)/ruff format --check arena tests
	$(BIN)/mypy

# The rules engine as a C extension (arena/engine/_game.c; needs a C compiler and the Python
# headers), built again now: `make setup` builds it when its sources change; arena.engine loads
# it when present and current, the pure-Python engine otherwise (ARENA_PURE_ENGINE=1 forces it).
engine-compiled: $(BIN)/arena
	$(BIN)/python -m arena.engine.build_compiled

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache arena/engine/_compiled
