# The front door: `make run` starts Nexo, `make test` runs every test. Both need only Python 3.11+.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean

$(STAMP): requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit("Nexo needs Python 3.11 or newer") if sys.version_info < (3, 11) else None'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

run: $(STAMP)
	$(PY) scripts/stack.py run

test: $(STAMP)
	@bash scripts/ensure_browser.sh
	@bash scripts/ensure_promtool.sh
	$(PY) scripts/stack.py test -- $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) scripts/stack.py exec --throwaway -- $(PY) -m bench

lint: $(STAMP)
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts
