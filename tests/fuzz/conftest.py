"""Registers the `fuzz` marker of the bounded fuzzing runs in this folder (pytest -m fuzz)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fuzz: bounded fuzzing smoke: the bundle properties at a fixed small max_examples and the "
                   "atheris reader target for 2,000 runs (select with -m fuzz, deselect with -m 'not fuzz')")
