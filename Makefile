# Two commands a new user needs (see README.md):
#   make quickstart   set up .venv, export the encoder, build the default DP bundle, classify examples
#   make test         run the test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1

.PHONY: quickstart test setup bundle clean

setup: $(VENV)/.installed

# torch is installed first and pinned: an unpinned torch resolves to gigabytes of CUDA wheels.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[export,tflite,ray,dev]'
	touch $@

models/quickstart.dpedge: $(VENV)/.installed data/assistant/train.jsonl data/assistant/labels.txt
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

test: $(VENV)/.installed
	$(PY) -m pytest -q

clean:
	rm -rf models/encoders models/*.dpedge .cache .pytest_cache
