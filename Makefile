# Two commands do all the set-up on a fresh machine (see README):
#   make demo   - create .venv, install dpgl, run the default demo
#   make test   - create .venv, install dpgl with dev tools, run ruff and the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dpgl-installed
# Tests and CI read the offline dataset copies beside the checkout when they exist.
DPGL_DATA_DIR ?= $(abspath ../shared/datasets)
export DPGL_DATA_DIR

.PHONY: demo collect-demo test test-slow lint bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: an unpinned torch would pull the multi-GB CUDA build.
	$(BIN)/pip install --quiet -c constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dpgl demo --output demo-output

# The collection service end to end: a local server, simulated devices, the result page.
collect-demo: $(STAMP)
	$(BIN)/dpgl collect demo --output collect-demo

test: $(STAMP)
	$(BIN)/ruff check --no-cache src tests
	$(BIN)/python -m pytest -q -p no:cacheprovider

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check --no-cache src tests
	$(BIN)/mypy

# The sparse edge-LDP pipelines at 10^4 and 10^5 users (a few minutes; the other benchmarks
# and their options: benchmarks/*.py, docs/edge-ldp.md).
bench: $(STAMP)
	mkdir -p bench-output
	$(BIN)/python benchmarks/edge_ldp.py --sizes 1e4,1e5 --eps 1,4,8 --out bench-output/edge_ldp.md

# Wheels for an offline host that brings its own torch and PyG (a GPU machine's CUDA build,
# docs/gpu.md): dpgl's wheel and every other runtime dependency at its pinned version, for
# CPython $(WHEELHOUSE_PY) on x86-64 Linux. There: pip install --no-index --find-links DIR dpgl
WHEELHOUSE    ?= wheelhouse
WHEELHOUSE_PY ?= 3.12
.PHONY: wheelhouse
wheelhouse: $(STAMP)
	rm -rf $(WHEELHOUSE) && mkdir -p $(WHEELHOUSE)
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation -w $(WHEELHOUSE) .
	$(BIN)/pip download --quiet -c constraints.txt -d $(WHEELHOUSE) --only-binary=:all: \
	  --python-version $(WHEELHOUSE_PY) --implementation cp --platform manylinux_2_28_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  $$($(BIN)/python -c "import tomllib; d = tomllib.load(open('pyproject.toml', 'rb')); \
	    print(' '.join(r for r in d['project']['dependencies'] if not r.startswith('torch')))")
	@ls $(WHEELHOUSE) | wc -l | xargs printf '%s wheels in $(WHEELHOUSE)/\n'

# Mutation testing of the privacy-critical code (docs/mutation.md); not part of `make test`
# or CI. Installs the pinned mutmut into the venv (torch and the other pins cannot move) and
# runs it in mutation/work/ (reports in mutation/reports/). MUTATION_TIMEOUT (s) bounds it.
.PHONY: mutation
mutation: $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -c constraints-mutation.txt mutmut
	VENV=$(abspath $(VENV)) mutation/run.sh

clean:
	rm -rf $(VENV) demo-output $(WHEELHOUSE) .pytest_cache .ruff_cache .mypy_cache
