# One-line set-up on a fresh machine: `make test` and `make bench` create the
# virtual environment, install the project and run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: test test-slow lint bench clean

# One install stamp per set of extras: .installed-test, -bench, -demo, -docs.
EXTRAS_test := test
EXTRAS_bench := test,bench
EXTRAS_demo := plot
EXTRAS_docs := docs

.PRECIOUS: $(VENV)/.installed-%
$(VENV)/.installed-%: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS_$*)]"
	touch $@

# The default suite: every test not marked slow (README, "Two commands", for its time), on two
# pytest-xdist workers that take a test file at a time. tests/conftest.py first compiles the
# kernels across the cores (dask-streamsvm compile's step), so that the workers load numba's cache
# instead of both compiling. --durations lists the 25 slowest, to keep an eye on what belongs in
# test-slow.
test: $(VENV)/.installed-test
	$(PY) -m ruff check dask_streamsvm tests benchmarks examples
	$(PY) -m pytest -m "not slow" -n 2 --dist loadfile --durations=25

# The tests marked slow: LIBLINEAR optima and streaming fits on the full a9a, w8a and
# ijcnn1, feature maps against LIBLINEAR, killed workers and processes, examples, README, the
# Hypothesis properties' full example counts; on two workers, as make test.
test-slow: $(VENV)/.installed-test
	$(PY) -m pytest -m slow -n 2 --dist loadfile --durations=25

# Every method against the peers (LIBLINEAR, dask-ml, Vowpal Wabbit, Snap ML): docs/peers.md.
bench: $(VENV)/.installed-bench
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist .pytest_cache
	find dask_streamsvm -name "*.nbi" -delete -o -name "*.nbc" -delete

.PHONY: demo docs
demo: $(VENV)/.installed-demo
	$(VENV)/bin/dask-streamsvm demo --plot demo_convergence.png

# Sphinx, warnings are errors; the HTML lands in docs/_build/html.
docs: $(VENV)/.installed-docs
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

.PHONY: clean-cache
clean-cache:
	find dask_streamsvm -name '*.nbi' -delete -o -name '*.nbc' -delete
