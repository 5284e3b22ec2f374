# The README's two commands: `make run` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install lint bench clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) lint
	$(PY) -m pytest $(PYTEST_ARGS)

run: $(STAMP)
	$(PY) -m agentcore table

bench: $(STAMP)
	$(PY) bench/bench_table.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
