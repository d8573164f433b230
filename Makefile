# mirrorspark — every target sets up what it needs (idempotent).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JARS := build/jars
REGISTRY := build/apicurio-registry
PYTEST_ARGS ?=
# make test runs the tests on this many pytest-xdist workers (each with its own brokers and SparkSession);
# tests of one xdist group (the fault suite, the secured clusters) run on one worker. 0 = in this process.
TEST_WORKERS ?= 3

.PHONY: install chromium spark-archive registry demo test test-unit lint bench bench-quick faults faults-report faults-random jars clean

install: $(STAMP) jars registry spark-archive

# The Spark driver JVM's class archive (src/mirrorspark/spark_session/class_archive.py): mirrorspark run's Spark
# starts in about half the time, a relaunch after a crash copies again sooner. Made once per JDK and PySpark, in
# ~/.cache/mirrorspark; a failure is said and ignored (runs start without it).
spark-archive: $(STAMP)
	-$(BIN)/python -m mirrorspark.spark_session

# The dashboard's browser test drives Debian's chromium through Playwright (never Playwright's own download).
# Only make test needs it (make demo never installs it); where it cannot be installed, say so and how.
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the dashboard test (apt-get)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "error: the dashboard test needs Debian's chromium, which is missing, and it cannot be installed here" \
	      "(apt-get as root): install the chromium package (e.g. sudo apt-get install chromium), or run" \
	      "make test-unit for the tests that need no browser" >&2; \
	    exit 1; \
	  fi; }

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

jars: $(JARS)/kafka/.done $(JARS)/spark/.done $(JARS)/mm2/.done

$(JARS)/%/.done: pom.xml
	mvn -q -B -P $* dependency:copy-dependencies -DoutputDirectory=$(JARS)/$* -DincludeScope=runtime
	touch $@

# Apicurio Registry (pom.xml's registry profile), the Schema Registry of `mirrorspark local up --schema-registry`
# and of the schema tests: fetched and unpacked here with Maven (Java 17 will do), run on Java 21+ only by what
# starts a registry (src/mirrorspark/kafka/local/registry.py), so make demo never needs Java 21.
registry: $(REGISTRY)/.done

$(REGISTRY)/.done: pom.xml
	rm -rf $(REGISTRY)
	mvn -q -B -P registry dependency:unpack -DoutputDirectory=$(REGISTRY) -Dmdep.overWriteReleases=true
	test -f $(REGISTRY)/quarkus-run.jar
	touch $@

demo: install
	$(BIN)/python -m mirrorspark.cli.demo

# --durations: every step of 15 s or more (the test budget's ledger: 25 minutes on a clean clone, 2 cores).
test: install chromium
	$(BIN)/ruff check
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/pytest -n $(TEST_WORKERS) --no-loadscope-reorder --durations=0 --durations-min=15 $(PYTEST_ARGS)

test-unit: $(STAMP)
	$(BIN)/pytest -m unit $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo --no-cache

# The fault suite at full size (kill -9, outages, broker failures; docs/faults.md), then its table.
faults: install
	rm -f build/faults/figures-full.jsonl
	MIRRORSPARK_FAULTS_SIZE=full $(BIN)/pytest -m faults $(PYTEST_ARGS); status=$$?; \
	$(BIN)/python tests/faults/report.py build/faults/figures-full.jsonl; exit $$status

# The randomized fault checker (tests/faults/chaos.py): a schedule drawn from SEED (printed first, to replay it)
# strikes for DURATION seconds while records flow, then the checker's verdict from the clusters (exit 1 on any
# violation); one line per mode in build/faults/random.jsonl (make faults-report adds its table to docs/faults.md;
# python tests/faults/report.py --random-only replaces just that table, keeping the suite's).
SEED ?= 1
DURATION ?= 180
MODE ?= both
CHAOS_ARGS ?=
faults-random: install
	PYTHONPATH=$(CURDIR)/src $(BIN)/python tests/faults/chaos.py --seed $(SEED) --duration $(DURATION) --mode $(MODE) $(CHAOS_ARGS)

# docs/faults.md from the newest figures: build/faults/figures-full.jsonl if present, else figures-small.jsonl.
faults-report: $(STAMP)
	$(BIN)/python tests/faults/report.py

bench: install
	$(BIN)/python -m bench

bench-quick: install
	$(BIN)/python -m bench --quick

clean:
	rm -rf build .mirrorspark bench/.work
