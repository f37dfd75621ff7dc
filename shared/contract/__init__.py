"""The store's contract: its operations, the typed API over them, the models, the error
tree, the settings and the clock. Imports nothing else of ``shared``."""
