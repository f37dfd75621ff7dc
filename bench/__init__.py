"""Benchmarks of the store: ``python -m bench`` / ``make bench``; see ``__main__``."""
