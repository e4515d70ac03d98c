"""dpedge runtime: classify text offline with a differentially private bundle.

Device side, minimal dependencies (numpy, msgpack, onnxruntime; ai-edge-litert
for TFLite bundles). It never imports the exporter, torch, TensorFlow, transformers or opendp.

Example:
    >>> from runtime import Classifier
    >>> clf = Classifier.load("models/quickstart.dpedge")       # doctest: +SKIP
    >>> clf.classify(["turn off the kitchen lights"])[0].label    # doctest: +SKIP
    'smart_home'
"""

from runtime.classifier import Classifier, Prediction
from runtime.errors import BundleError, DpedgeError, InputError

__all__ = ["BundleError", "Classifier", "DpedgeError", "InputError", "Prediction"]
__version__ = "0.1.0"
