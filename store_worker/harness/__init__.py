"""Where the store meets an agent harness and the workers that follow it.

What a turn is given (``inject``, ``rules``), how the store reads a harness's messages and
sessions (``messages``, ``sessions``), and the durable outbox a finished turn is queued in for
extraction (``outbox``, ``jobs``).
"""
