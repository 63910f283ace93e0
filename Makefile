# Every target sets up .venv itself, so each works on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
EXTRAS := test,arrow,iceberg,spark,peers

# Peer readers that cannot share .venv (tests/peers, docs/interop.md "Peers"): Sail's
# pyspark-client conflicts with pyspark, DuckDB 1.5.5 with the duckdb 1.4.4 of the peers
# extra. Each venv is rebuilt when its pins change; a '*' .gitignore keeps it out of git.
SAIL_VENV    := .venv-sail
SAIL_PINS    := pysail==0.7.2 pyspark-client==4.2.0
DUCK15_VENV  := .venv-duckdb15
DUCK15_PINS  := duckdb==1.5.5 duckdb-extension-iceberg==1.5.5 duckdb-extension-avro==1.5.5 duckdb-extension-httpfs==1.5.5 pyarrow==26.0.1
# Iceberg Java 1.10.2 on Spark 3.5 (pyspark 4 is in .venv); tools/java_peer_setup.py adds the
# relocated Jackson and the SQLite JDBC driver in .venv-java/jars.
JAVA_VENV    := .venv-java
JAVA_PINS    := pyspark==3.5.9 snowpark-connect-deps-iceberg==1.0.3 pyarrow==26.0.1
NODE_PEERS   := .node-peers
NODE_PINS    := azurite@3.35.0

.PHONY: venv peers postgres test test-fast demo lint fuzz bench mutation clean FORCE

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

peers: $(SAIL_VENV)/.installed-stamp $(DUCK15_VENV)/.installed-stamp $(JAVA_VENV)/jars/.stamp \
	$(NODE_PEERS)/.stamp postgres

# Debian's PostgreSQL server for the shared-catalog tests (tests/_postgres.py), installed where
# missing; the tests fail under `make test` without it.
postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { command -v apt-get >/dev/null && apt-get install -y -q postgresql >/dev/null; } || \
	  echo "no PostgreSQL server and no apt-get to install it: the PostgreSQL tests will fail"

# Azurite, Microsoft's Azure Storage emulator (tests/_emulators.py), from the npm registry.
# Without npm the Azure tests skip and say so; everything else runs.
$(NODE_PEERS)/.stamp: Makefile
	@if command -v npm >/dev/null; then \
	  mkdir -p $(NODE_PEERS) && echo '*' > $(NODE_PEERS)/.gitignore && \
	  npm install --prefix $(NODE_PEERS) --no-audit --no-fund --silent $(NODE_PINS) && touch $@; \
	else echo "npm not found: the Azure (Azurite) tests will skip"; fi

# $(1): venv folder, $(2): pins. The .pins file changes only when the pins do.
define side_venv
$(1)/.pins: FORCE
	@mkdir -p $(1)
	@echo '$(2)' | cmp -s - $$@ || echo '$(2)' > $$@

$(1)/.installed-stamp: $(1)/.pins
	$(PYTHON) -m venv $(1)
	echo '*' > $(1)/.gitignore
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python -m pip install --quiet $(2)
	touch $$@
endef
$(eval $(call side_venv,$(SAIL_VENV),$(SAIL_PINS)))
$(eval $(call side_venv,$(DUCK15_VENV),$(DUCK15_PINS)))
$(eval $(call side_venv,$(JAVA_VENV),$(JAVA_PINS)))

$(JAVA_VENV)/jars/.stamp: $(JAVA_VENV)/.installed-stamp tools/java_peer_setup.py tools/relocate_jar.py
	$(PYTHON) tools/java_peer_setup.py $(JAVA_VENV)
	touch $@

# PUFFIN_REQUIRE_PEERS: a peer venv missing under `make test` fails instead of skipping.
test: $(STAMP) peers
	PUFFIN_REQUIRE_PEERS=1 PUFFIN_DUCKDB15_PYTHON=$(DUCK15_VENV)/bin/python \
	PUFFIN_SAIL_PYTHON=$(SAIL_VENV)/bin/python PUFFIN_JAVA_PYTHON=$(JAVA_VENV)/bin/python \
	$(PY) -m pytest -q -n 2 --dist loadfile

# The quick loop (docs/testing.md): every test that needs no side venv of `make peers` and no
# JVM, slow ones left out too (markers peer, java, slow; tests/conftest.py sets the first two).
test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow and not peer and not java"

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench fuzz tools
	$(VENV)/bin/mypy

# The main job: a sample Iceberg table under ./demo-output, statistics and deletion vectors
# computed on Spark local[2], verified, and shown with `puffin inspect`.
demo: $(STAMP)
	$(PY) -m puffin.demo

fuzz: $(STAMP)
	PUFFIN_FUZZ_EXAMPLES=100000 $(PY) -m pytest -q tests/core/test_fuzz.py -p no:randomly

# Mutation testing with mutmut 3 (not part of make test): each module's mutants against the
# fast tests that reach them ([tool.mutmut] in pyproject.toml; a module must be in its
# only_mutate), then killed / total per module. Work and results stay in ./mutants;
# `$(VENV)/bin/mutmut show NAME` prints a surviving mutant. MUTATION_JOBS: parallel workers.
MODULES ?= src/puffin/blobs/dv/format.py src/puffin/codecs.py
MUTATION_JOBS ?=
mutation: $(STAMP)
	$(PY) tools/mutation_report.py run $(if $(MUTATION_JOBS),--jobs $(MUTATION_JOBS)) $(MODULES)

bench: $(STAMP) peers
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) $(SAIL_VENV) $(DUCK15_VENV) $(JAVA_VENV) $(NODE_PEERS) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
