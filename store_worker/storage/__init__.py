"""What the store keeps on disk and in RAM, and every change to it.

The files under the data dir are the truth; everything in RAM is a cache rebuilt from them.
Here live the layout and its durable writes (``files``, ``log``, ``bankfiles``, ``state``), the
one-writer lock, a bank's records and their replay (``bank``, ``replay``, ``records``,
``snapshot``), the bank folders (``banks``, ``shards``), the write chain (``writes``,
``commit``, ``indexer``), drafts awaiting ratification, the change feed (``events``), the
rewrites (``purge``) and the checks on input and on the files (``validate``, ``audit``).
"""
