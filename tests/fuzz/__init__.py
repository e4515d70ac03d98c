"""Fuzzing harnesses and their bounded CI runs (a package, so that its conftest.py does not
shadow tests/conftest.py, which the test modules import as `conftest`)."""
