# One-line set-up on a fresh machine: `make test` and `make bench` create the
# virtual environment, install the project and run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: test lint bench clean

$(VENV)/.installed-test: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

$(VENV)/.installed-bench: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $@

test: $(VENV)/.installed-test
	$(PY) -m ruff check dask_streamsvm tests benchmarks examples
	$(PY) -m pytest

bench: $(VENV)/.installed-bench
	$(PY) -m benchmarks.bench_kernel

clean:
	rm -rf $(VENV) build dist .pytest_cache
	find dask_streamsvm -name "*.nbi" -delete -o -name "*.nbc" -delete

.PHONY: demo
demo: $(VENV)/.installed-test
	$(PY) examples/a9a_vs_liblinear.py

.PHONY: clean-cache
clean-cache:
	find dask_streamsvm -name '*.nbi' -delete -o -name '*.nbc' -delete
