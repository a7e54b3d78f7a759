# The two commands of the README: `make run` and `make test`. Both are safe to run twice.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
PROBLEMS ?= data/cuda-l1/h100.jsonl.gz
# Measured releases shipped in the repository (none yet is fine): imported after their problems.
RELEASES ?= data/releases

.PHONY: run test test-fast lint format setup setup-test browser sandbox serve migrate clean

run: setup migrate serve

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The stamp files make a second `make` skip pip when nothing changed.
$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-test: requirements-test.txt requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-test.txt
	touch $(VENV)/.installed $@

setup: $(VENV)/.installed sandbox

setup-test: $(VENV)/.installed-test browser sandbox

# User code runs confined by bubblewrap (evaluation/harness/sandbox.py). Installing it needs root;
# without it embedded mode falls back to running unconfined, and says so on every run page.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap >/dev/null; }; \
	  else echo "bubblewrap is not installed and cannot be installed here: user code will run unconfined (embedded mode only)"; fi; }

# Browser tests drive Debian's Chromium with Playwright (Playwright's own browser download
# cannot run here). Installing it needs root; without it the browser tests skip outside CI.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }; \
	  else echo "chromium is not installed and cannot be installed here: browser tests will skip"; fi; }

migrate: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py import_problems $(PROBLEMS)
	$(BIN)/python manage.py import_release $(RELEASES)

serve:
	$(BIN)/daphne --bind $(HOST) --port $(PORT) config.asgi:application

# CI runs the suite against the machine's real PostgreSQL and Redis; elsewhere it uses what the
# environment says, SQLite and in-process services by default.
ifeq ($(CI),true)
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/kernel_court
export REDIS_URL ?= redis://127.0.0.1:6379/15
endif

# In parallel (pytest-xdist): each worker has its own test databases and Redis database
# (tests/xdist_services.py). Three workers on two cores, which the suite keeps busy: two took as long
# (11 min 31 s against 11 min 17 s, within the 8-16% between runs of the same code; README).
# TEST_WORKERS=0 runs it in one process. `loadgroup`: tests whose fixtures build a world of their own
# (a PostgreSQL cluster, a server) go to one worker, which builds it once (tests/conftest.py).
TEST_WORKERS ?= 3

test: setup-test lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS)

# Every test that needs no sandboxed verification, browser, server process or GPU (marked by the
# fixtures they use, tests/conftest.py) and is not marked slow (one that waits on purpose): under a
# minute on two cores, in two processes.
FAST_WORKERS ?= 2

test-fast: setup-test
	$(BIN)/python -m pytest -q -n $(FAST_WORKERS) -m "not verifies and not e2e and not server and not gpu and not slow" $(PYTEST_ARGS)

# ruff's rules and format, the import rules (import-linter) and the type checker (mypy, its cache in
# var/mypy) live in pyproject.toml; `make format` applies the format.
lint: setup-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python -m mypy

format: setup-test
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var staticfiles
