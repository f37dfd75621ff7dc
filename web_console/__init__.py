"""The web console: server-rendered pages over the store contract (``StoreAPI``) to see and
curate memory (banks, search, a memory's history and edits, rules, drafts, the outbox,
consolidation, redaction, the injection preview).

``memory console`` serves it in the foreground; ``memory up`` starts it as the
``memory-console`` Ray actor (``web_console.actor``) and ``memory down`` stops it. It imports
``shared`` only, plus the consolidator's public pass for a dry run where no consolidator actor
runs (``web_console.consolidation``). docs/ARCHITECTURE.md "The console" has the map.
"""
