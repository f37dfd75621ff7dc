"""Where the store meets an agent harness and the workers that follow it.

What a turn is given (``inject``, ``rules``), how the store reads a harness's messages and
sessions (``messages``, ``sessions``), the durable outbox a finished turn is queued in for
extraction (``outbox``, with what a turn becomes in ``turns``), and the sibling workers'
checkpoints (``siblings``).
"""
