# litejobs: `make demo` runs the demo marketplace, `make test` runs the whole suite.
# PYTHON=/path/to/python3.12+ picks the interpreter; DJANGO=52 tests on Django 5.2 LTS, on
# Python 3.11 (the oldest litejobs supports) when one is installed.
SHELL := /bin/bash
DJANGO ?= 61
VENV ?= $(if $(filter 61,$(DJANGO)),.venv,.venv-django$(DJANGO))
PYTHON_MIN := $(if $(filter 52,$(DJANGO)),3.11,3.12)
PYTHON ?= $(shell scripts/find-python $(filter 3.11,$(PYTHON_MIN)))
PYTHON_VERSION := $(shell "$(PYTHON)" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PY := $(VENV)/bin/python
# Named after its Python: a venv of another version (or of none yet) is made again.
STAMP := $(VENV)/.installed-python$(PYTHON_VERSION)
REQUIREMENTS := requirements/base.txt requirements/test.txt requirements/docs.txt requirements/django$(DJANGO).txt pyproject.toml

.PHONY: demo test lint pytest docs docs-reference bench db-stop clean

$(STAMP): $(REQUIREMENTS)
	@if [ -z "$(PYTHON_VERSION)" ]; then \
	  echo "litejobs needs Python $(PYTHON_MIN) or newer and found none on PATH or under pyenv."; \
	  echo "Install one (e.g. 'pyenv install $(PYTHON_MIN)' or your OS package python$(PYTHON_MIN)) or run 'make PYTHON=/path/to/python$(PYTHON_MIN)'."; \
	  exit 1; \
	fi
	@if [ -x "$(PY)" ] && [ "$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$(PYTHON_VERSION)" ]; then \
	  echo "$(VENV) runs another Python: making it again on $(PYTHON) ($(PYTHON_VERSION))."; \
	  rm -rf "$(VENV)"; \
	fi
	@if [ ! -x "$(PY)" ]; then "$(PYTHON)" -m venv "$(VENV)"; fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/django$(DJANGO).txt -r requirements/test.txt -e .
	@rm -f $(VENV)/.installed*
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) manage.py demo

lint: $(STAMP)
	$(VENV)/bin/ruff check litejobs project tests scripts
	$(VENV)/bin/ruff format --check litejobs project tests scripts
	$(VENV)/bin/mypy

# A process has one settings module, so the suite is two pytest sessions: the library's tests
# (tests.settings), then the demo project's own (tests/demo/, tests.demo.settings); each keeps to
# its part of the paths in PYTEST_ARGS. Both run, and either failing fails the target. With
# DATABASE_URL unset, each starts its embedded PostgreSQL and stops it at the end if it started
# it. The suite includes the `makemigrations --check` test.
pytest: $(STAMP)
	@status=0; \
	$(VENV)/bin/pytest $(PYTEST_ARGS) || status=$$?; \
	$(VENV)/bin/pytest --ds tests.demo.settings $(PYTEST_ARGS) || status=$$?; \
	exit $$status

# The docs site: the generated reference must match the code, and the build is strict (a broken
# link, an anchor that does not exist or a page missing from the nav fails it). Output: site/.
docs: $(STAMP)
	$(PY) scripts/docs_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Rewrite the generated parts of docs/reference/ (settings, CLI) from the code.
docs-reference: $(STAMP)
	$(PY) scripts/docs_reference.py

test: lint docs pytest

bench: $(STAMP)
	$(PY) manage.py litejobs bench $(BENCH_ARGS)

# The embedded PostgreSQL keeps running between manage.py commands; this stops it.
db-stop: $(STAMP)
	$(PY) -c "from project.database import stop_embedded; stop_embedded()"

clean:
	rm -rf .venv .venv-django* .pytest_cache .ruff_cache .mypy_cache site
