"""Finding memories: the read side of the store.

A bank's in-RAM index (``index``), the one scorer (``scoring``) and the signals it fuses
(``signals``, ``context``, ``query``, ``spelling``, ``synonyms``, ``entities``), the semantic arm
(``embed``, ``vectors``), link queries (``links``), and get/list/tags/recall over the banks
(``reads``).
"""
