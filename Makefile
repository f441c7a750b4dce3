# The two commands of the README: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HASH := $(shell cksum pyproject.toml Makefile | cksum | cut -d' ' -f1)
RUN_STAMP := $(VENV)/.run-$(HASH)
TEST_STAMP := $(VENV)/.test-$(HASH)
# The plugin runtime (autocoder/runtime): the interpreter plugin code runs on in the sandbox,
# apart from the portal's venv. Tests use the very same one.
RUNTIME_STAMP := .plugin-runtime/autocoder-runtime.json
# llama.cpp is compiled for a portable x86-64 (AVX2) target: a native build picks up CPU
# features (AMX) that some virtual machines report but do not allow, and then segfaults.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# The portal's own modules, compiled once before starting: where PYTHONDONTWRITEBYTECODE is
# set (as on the machines CI runs on), every process compiled them again, and that was half
# of a process's start (Django's set-up: 3.0 s, then 1.5 s once compiled). compileall skips
# what is up to date.
BYTECODE := $(PY) -m compileall -q -j 0 config autocoder teams projects runs marketplace tools

.PHONY: run test test-browser code-shape install user-install-check lint typecheck clean-var screenshots sandbox-image

run: $(RUN_STAMP) $(RUNTIME_STAMP)
	$(BYTECODE)
	$(PY) manage.py up

# Everything, the browser tests (tests/browser, Playwright + Chromium) included; they run last.
test: $(TEST_STAMP) $(RUNTIME_STAMP)
	$(BYTECODE)
	$(PY) -m pytest $(PYTEST_ARGS)

# Only the browser tests, for a quicker look at the pages.
test-browser: $(TEST_STAMP) $(RUNTIME_STAMP)
	$(BYTECODE)
	$(PY) -m pytest tests/browser $(PYTEST_ARGS)

# Only the code-shape checks: no import cycle between first-party modules, no module over 600
# lines, `dict[str, Any]` under its ceiling (tests/foundation/test_code_shape.py); then the
# figures: the longest module and the count of `dict[str, Any]`.
code-shape: $(TEST_STAMP)
	$(PY) -m pytest tests/foundation/test_code_shape.py -q $(PYTEST_ARGS)
	$(PY) tests/foundation/test_code_shape.py

# The folder drawing: which folder imports which, top to bottom, and the check that no arrow
# goes back up (tests/foundation/test_folder_arrows.py; docs/development.md, "Layers").
.PHONY: folders
folders: $(TEST_STAMP)
	$(PY) -m tests.foundation.test_folder_arrows
	$(PY) -m pytest tests/foundation/test_folder_arrows.py -q $(PYTEST_ARGS)

install: $(RUN_STAMP) $(RUNTIME_STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first, pinned: left to sentence-transformers, pip would fetch a multi-GB CUDA build.
$(RUN_STAMP): pyproject.toml $(VENV)/bin/python
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e .
	touch $@

$(RUNTIME_STAMP): autocoder/runtime/requirements.txt $(RUN_STAMP)
	$(PY) -m autocoder.runtime.build

# The Docker backend's image (SANDBOX_BACKEND=docker), without any image registry: a Debian
# root file system from mmdebstrap with the plugin runtime's lock, `docker import`ed as
# autocoder-sandbox:<lock digest> and :latest (docs/sandbox.md). Up to date: says so, builds nothing.
sandbox-image: $(RUN_STAMP)
	$(PY) -m autocoder.sandbox.image $(SANDBOX_IMAGE_ARGS)

# The test extras add the local model runtime (llama-cpp-python compiles once, then pip caches it).
$(TEST_STAMP): $(RUN_STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install -q -e '.[dev,local]'
	touch $@

# The product as users install it: a venv of its own with `make run`'s install only (no dev
# extras), the bundled demo generated, published and pip-installed from a live portal.
USER_VENV ?= $(CURDIR)/.venv-user
user-install-check:
	$(MAKE) install VENV=$(USER_VENV)
	$(USER_VENV)/bin/python .ci/user_install.py

# Refresh the README's screenshots (docs/screenshots) from the browser tests.
screenshots: $(TEST_STAMP)
	AUTOCODER_SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(PY) -m pytest tests/browser -q

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

typecheck: $(TEST_STAMP)
	$(VENV)/bin/mypy config autocoder teams projects runs marketplace tools

clean-var:
	rm -rf var
