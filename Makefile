# The two commands of the README: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test install lint typecheck clean-var

run: $(STAMP)
	$(PY) manage.py up

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

install: $(STAMP)

# torch first, pinned: left to sentence-transformers, pip would fetch a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy autocoder projects marketplace

clean-var:
	rm -rf var
