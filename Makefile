# Every target sets up .venv itself, so each works on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
EXTRAS := test,arrow,iceberg,spark

.PHONY: venv test demo lint fuzz bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench fuzz
	$(VENV)/bin/mypy

# The main job: a sample Iceberg table under ./demo-output, statistics and deletion vectors
# computed on Spark local[2], verified, and shown with `puffin inspect`.
demo: $(STAMP)
	$(PY) -m puffin.demo

fuzz: $(STAMP)
	PUFFIN_FUZZ_EXAMPLES=100000 $(PY) -m pytest -q tests/test_fuzz.py -p no:randomly

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
