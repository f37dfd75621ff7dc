"""Benchmarks of the store (issue 2): ``python -m bench`` / ``make bench``; see ``__main__``."""
