# The front door: `make run` starts Nexo, `make test` runs every test (the lint gate first). Both need
# only Python 3.11+.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-cluster lint bench lock clean backup restore

# requirements-dev.txt is requirements.txt (what production installs) plus the tests, the linters and
# the embedded servers, every package pinned with its hashes (`make lock` recompiles both from
# pyproject.toml).
$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit("Nexo needs Python 3.11 or newer") if sys.version_info < (3, 11) else None'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.txt
	@touch $(STAMP)

run: $(STAMP)
	$(PY) scripts/stack.py run

# Backups of the embedded Postgres (ADR-016, README "Backups and restore"): a base backup now; a restore
# to AT (RFC 3339, default the archive's end) from the newest backup before it, or FROM=<name>.
backup: $(STAMP)
	@$(PY) scripts/stack.py backup

restore: $(STAMP)
	@$(PY) scripts/stack.py restore --at "$(AT)" --from "$(FROM)"

# ensure_axe.sh fetches the pinned axe-core before the suite; when it cannot, it says why here and the
# accessibility test fails with that reason (tests/e2e/browser_fixtures.py), so make test goes on to run the rest.
test: lint
	@bash scripts/ensure_browser.sh
	@bash scripts/ensure_axe.sh >/dev/null || true
	@bash scripts/ensure_promtool.sh
	@bash scripts/ensure_cluster_tools.sh
	$(PY) scripts/stack.py test -- $(PYTEST_ARGS)

# The fleet test alone (tests/cluster/, ADR-019): Patroni, PgBouncer, Sentinel and two Nexo hosts on this
# machine; `make test` runs it too.
test-cluster: $(STAMP)
	@bash scripts/ensure_cluster_tools.sh
	$(PY) scripts/stack.py test -- tests/cluster $(PYTEST_ARGS)

# The gate CI runs (through `make test`): formatting, lint, types and the layer order.
lint: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) scripts/check_layers.py

# PgBouncer for the fleet phase (bench/pgbouncer.py): installed here too, so a fresh machine's run gets there.
bench: $(STAMP)
	@bash scripts/ensure_cluster_tools.sh
	$(PY) scripts/stack.py exec --throwaway -- $(PY) -m bench

# Recompile the pinned, hashed requirements after editing pyproject.toml's dependencies.
lock: $(STAMP)
	$(VENV)/bin/uv pip compile pyproject.toml --generate-hashes --python-version 3.11 --quiet -o requirements.txt
	$(VENV)/bin/uv pip compile pyproject.toml --group dev -c requirements.txt --generate-hashes --python-version 3.11 \
		--quiet -o requirements-dev.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache test-artifacts
