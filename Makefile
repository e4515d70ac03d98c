# The commands a user needs (see README.md):
#   make quickstart     .venv with the exporter and runtime, the encoder, the demo bundle, seven answers
#   make test           the whole test suite (adds TensorFlow, Ray and the test tools to .venv)
#   make test-runtime   the runtime's tier, `pytest -m "not slow"`, in a bare runtime install (.venv-runtime)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUNTIME_VENV := .venv-runtime
export HF_HUB_OFFLINE := 1

.PHONY: quickstart test test-runtime test-web setup bundle encoder clean

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
	touch $@

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

test: $(VENV)/.test
	$(PY) -m pytest -q

# The bare runtime (numpy, msgpack, tokenizers, onnxruntime) plus the test extra, reading the
# encoder that .venv exported into models/.
$(RUNTIME_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RUNTIME_VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

test-runtime: encoder $(RUNTIME_VENV)/.installed
	$(RUNTIME_VENV)/bin/python -m pytest -q -m "not slow"

clean:
	rm -rf models/encoders models/*.dpedge .cache .pytest_cache

# The web runtime (web/): its packages from the committed lock file, the fixtures the Python side
# makes for it (real bundles, golden vectors, the CLI's quick-start answers), then vitest in Node
# and in headless Chromium (Debian's chromium package).
WEB_FIXTURES := $(CURDIR)/build/web-fixtures
test-web: $(VENV)/.test
	$(PY) web/scripts/fixtures.py --out $(WEB_FIXTURES)
	cd web && npm ci --no-audit --no-fund && DPEDGE_WEB_FIXTURES=$(WEB_FIXTURES) DPEDGE_PYTHON=$(CURDIR)/$(PY) npm test
