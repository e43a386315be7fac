"""Engine tests: pure functions, no cluster. A package so that module names do not clash
with tests/integration (both have a test_scope.py)."""
