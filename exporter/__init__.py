"""dpedge exporter (server side): turns a labelled dataset into a differentially private bundle.

Data flows one way: records -> embeddings -> exact class statistics and vote counts -> noisy
releases -> bundle (`exporter.build` lists the stages). Only `exporter.privacy.PrivacyBudget`
turns exact values into something that leaves the server. The exporter reuses the runtime's
tokenizer, encoder and hashing so that both sides hash identically.
"""

import os

# TensorFlow (the [tflite] extra) is imported by transformers whenever it is installed; its
# start-up INFO lines are noise for the data owner. Errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
