# nsvqa — build, demo, test and benchmark entry points.
#   make demo    set up .venv if needed, then the shipped parsers (pretrained/mid-mini) on fresh easy/mid/hard
#                test splits: NS-VQA, P-NSVQA, P-NSVQA-exact, the visual factor's RD beside the study's
#                (outputs/demo/); `make demo-train` trains the parsers at the demo profile instead;
#                `make demo-executors` runs the executors on the bundled examples
#   make test    set up .venv if needed, run the test suite (2 workers)
#   make study   set up .venv if needed, then run the next pending piece of the robustness study
#                (results/study/pieces/<piece>/; commit it before the next); STUDY_PIECES=n runs n;
#                `make study-check` rebuilds results/study's tables from the committed predictions
#   make bench   set up .venv if needed, run the executor, generator, question, scene-parser and baseline benchmarks,
#                then `make demo` and `make test` on fresh clones (BENCH_SETUP_ARGS=--warm-cache keeps uv's cache)
#   make clean   remove build outputs and caches (keeps .venv); `make distclean` also removes .venv

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

# The installer: uv (parallel downloads and unpacking; docs/performance.md, Set-up). It compiles the
# bytecode at install, on every core, so that no later process compiles torch's sources again (each
# one does where PYTHONDONTWRITEBYTECODE is set: about 7 s per process).
UV_COMPILE ?= --compile-bytecode
# A uv on PATH is used as it is; without one, `make venv` installs this pinned release into .venv
# from PyPI with the venv's pip first.
UV_VERSION := 0.13.9
UV ?= $(shell command -v uv 2>/dev/null || echo $(VENV)/bin/uv)
# Packages that PyPI's Linux torch wheel pulls in and that nothing loads on a CPU (the file says
# which and why); `make venv UV_EXCLUDES=` installs them too, for a GPU machine.
UV_EXCLUDES ?= requirements-excludes.txt

# The install stamp is keyed on the content of the dependency files, so editing either reinstalls
# (not on requirements-excludes.txt: an install never removes a package, so a new exclusion needs a new .venv).
DEPS_HASH := $(shell cat requirements.txt pyproject.toml 2>/dev/null | sha256sum | cut -c1-12)
STAMP     := $(VENV)/.installed-$(DEPS_HASH)

# Debian packages for headless OpenGL (EGL + Mesa llvmpipe) used by the moderngl renderer.
APT_PACKAGES := libegl1 libgl1-mesa-dri libgles2 libegl-mesa0

DEMO_OUT ?= outputs/demo
.PHONY: help venv apt demo demo-picture demo-train demo-executors test bench study study-check clean distclean

help:
	@echo "make demo   - every shipped model on easy/mid/hard test splits beside the study, RD report -> $(DEMO_OUT) (creates .venv on first use)"
	@echo "make demo-picture - the README's picture and demo table from the last make demo (results/demo/)"
	@echo "make demo-train - the same experiment, training the parsers at the demo profile"
	@echo "make demo-executors - the executors on the bundled example scenes and questions"
	@echo "make test   - run the test suite with 2 workers (creates .venv on first use)"
	@echo "make study  - run the next pending piece of the robustness study -> results/study/pieces/"
	@echo "make bench  - the executor, generator, question, scene-parser and baseline benchmarks; demo and test on fresh clones"
	@echo "make clean  - remove build outputs and caches; make distclean also removes .venv"

# editable_mode=compat puts the repo root on sys.path (a .pth), so top-level packages created after
# the install (executors/, parsers/, ...) import from anywhere, e.g. `python scripts/x.py`.
venv: $(STAMP)

$(STAMP):
	@test -x $(PY) || { echo "Creating $(VENV) with $$($(PYTHON) --version)"; $(PYTHON) -m venv $(VENV); }
	@test -x "$(UV)" || { echo "Installing uv $(UV_VERSION) into $(VENV)"; $(PY) -m pip install -q uv==$(UV_VERSION); }
	$(UV) pip install --python $(PY) $(UV_COMPILE) -r requirements.txt $(if $(UV_EXCLUDES),--excludes $(UV_EXCLUDES)) \
	    -e . --config-settings editable_mode=compat
	@rm -f $(VENV)/.installed-*
	@touch $@

# Installs missing Debian packages (apt-get update only when something is missing).
# Without root or apt-get it names the packages and carries on; only rendering needs them.
apt:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg -s "$$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
	done; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "WARNING: missing system packages for headless OpenGL rendering:$$missing" >&2; \
	  echo "         install them as root: apt-get install -y$$missing  (continuing without them)" >&2; \
	  exit 0; \
	fi; \
	echo "Installing system packages:$$missing"; \
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; }; then \
	  echo "WARNING: apt-get failed to install:$$missing (rendering will not work; continuing)" >&2; \
	fi

# Every model of the study's in-domain table from pretrained/mid-mini (trained on mid, seed 0, at the
# study's settings) on fresh easy / mid / hard test splits of object questions, beside the study's
# committed predictions on the same questions; the visual factor's report.
DEMO_MODELS ?= random,majority,lstm,cnn_lstm,film,mdetr,objmac-trace,nscl,nsvqa,pnsvqa,pnsvqa-exact
demo: apt venv
	@start=$$(date +%s); mkdir -p $(DEMO_OUT); \
	$(PY) scripts/run_factor.py --factor visual --profile demo --questions object --train-variants mid \
	    --pretrained pretrained:mid-mini --models $(DEMO_MODELS) --allow-partial-rd --no-plots --no-progress \
	    --data $(DEMO_OUT)/data --runs $(DEMO_OUT)/runs --report $(DEMO_OUT)/report --workers 2 > $(DEMO_OUT).log 2>&1 \
	    || { tail -n 30 $(DEMO_OUT).log; exit 1; }; \
	$(PY) scripts/run_study.py --compare $(DEMO_OUT)/report/visual/report.json && \
	echo "make demo: done in $$(( $$(date +%s) - start )) s; report: $(DEMO_OUT)/report/visual/report.md (log $(DEMO_OUT).log)"

# The README's picture and demo table (results/demo/demo.png, .json) from the last `make demo`'s report.
demo-picture: venv
	@test -f $(DEMO_OUT)/report/visual/report.json || $(MAKE) demo
	$(PY) scripts/run_study.py --compare $(DEMO_OUT)/report/visual/report.json --picture results/demo/demo.png

# Resumable: rerunning continues where an interrupted run stopped. Trains the parsers at the demo profile,
# the scene parser the study's for object questions (--study-scene-parser: objects only, no part crops,
# no stride-4 level; its one home is orchestration.study.settings.config.STUDY.scene_overrides).
demo-train: apt venv
	@start=$$(date +%s); \
	$(PY) scripts/run_factor.py --factor visual --profile demo --questions object --train-variants mid \
	    --models nsvqa,pnsvqa,pnsvqa-exact,nsvqa+gtprog,pnsvqa+gtprog --allow-partial-rd --jobs 2 --study-scene-parser \
	    --data $(DEMO_OUT)-train/data --runs $(DEMO_OUT)-train/runs --report $(DEMO_OUT)-train/report --workers 2 && \
	echo "make demo-train: done in $$(( $$(date +%s) - start )) s; report: $(DEMO_OUT)-train/report/visual/report.md"

demo-executors: apt venv
	$(PY) scripts/demo_executors.py

STUDY_PIECES ?= 1
study: apt venv
	$(PY) scripts/run_study.py --pieces $(STUDY_PIECES) --frozen
	$(PY) scripts/run_study.py --report

# every table of results/study rebuilt from the committed predictions; fails if one number differs
study-check: venv
	$(PY) scripts/run_study.py --check

test: apt venv
	$(PY) -m pytest -n 2 tests

bench: apt venv
	$(PY) benchmarks/bench_executor.py
	$(PY) benchmarks/bench_generator.py
	$(PY) benchmarks/bench_questions.py
	$(PY) benchmarks/bench_scene_parser.py --profiles tiny mini
	$(PY) benchmarks/bench_baselines.py --profiles tiny mini
	$(PY) benchmarks/bench_setup.py $(BENCH_SETUP_ARGS)

clean:
	rm -rf build dist *.egg-info .pytest_cache .hypothesis
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
