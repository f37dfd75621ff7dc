"""The redaction benchmark: median µs for ``shared.redact.redact`` on typical ~500-character
texts, each with and without a secret.

The texts are fixed, so runs compare: everyday chat (no trigger word at all), the same chat
with a GitHub token pasted in, developer-agent prose that names a password, a token budget and
a key point (the words that wake the context rules up) but holds no secret, and that prose
with ``OPENAI_API_KEY=sk-proj-...`` in place of a sentence. Each is redacted once to warm the
caches (the catalogue loads lazily on the first call), then timed ``repeat`` times. A report,
never an assertion: ``bench.__main__`` compares the medians to the 50 µs target.

Before the credential catalogue (the 40-shape redact.py, measured the same way on the same
machine with load average ~0.3-3): chat 8.1 µs, with a token 230 µs, technical prose 105 µs,
with the key 236 µs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

PLAIN = (
    "We moved the deploy script into ci/ last week, and the token budget for the summariser is "
    "now 2000 per call. Maria said the key point is that the staging database still uses the "
    "old password policy, so rotate it before Friday. The build on main failed twice because "
    "the cache key changed after the lockfile update; rerunning fixed it. Next: write the "
    "migration notes, check the retry backoff (it doubles up to 30 s), and ask Sam whether "
    "the session timeout of 15 minutes is still what the product team wants for the beta."
)
# Everyday conversation, the bulk of what an agent's memory sees: no trigger word at all.
CHAT = (
    "Caroline: I went to the support group yesterday and it was really powerful. Everyone "
    "shared their stories and I felt so accepted. Melanie: That sounds amazing! I'm glad you "
    "found people who understand. How are the kids doing with the new school? Caroline: They "
    "love it, especially the art classes on Thursdays. We painted sunflowers last weekend and "
    "hung them in the kitchen. Melanie: Sunflowers are my favourite. We should plan a trip to "
    "the lake in July, the four of us, before the summer gets too busy with camp and work."
)
# The same chat with a (fake) GitHub token pasted in place of a sentence.
CHAT_SECRET = CHAT.replace(
    "How are the kids doing with the new school?",
    "Here is the token for the shared repo: ghp_R8xT2mLq9ZbV4cKw7HnP3sJd6FgY1aEu5Qo0",
)
# The technical prose with one sentence replaced by an assignment holding a (fake) key.
SECRET = PLAIN.replace(
    "Maria said the key point is that the staging database still uses the old password "
    "policy, so rotate it before Friday.",
    "Use OPENAI_API_KEY=sk-proj-Q3vT9xLmZ2bR7kWp4HsN8dYc1FgJ6aEu0iVo5rXy for the eval run "
    "and rotate the staging password before Friday.",
)


def median_us(fn: Callable[[str], Any], text: str, repeat: int) -> float:
    fn(text)  # warm: lazy catalogue load, regex caches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        samples.append(time.perf_counter() - start)
    return round(statistics.median(samples) * 1e6, 1)


def redaction(repeat: int = 2000) -> dict[str, Any]:
    from shared.redact import redact

    secrets, plain = (SECRET, CHAT_SECRET), (PLAIN, CHAT)
    drifted = [t for t in secrets if not redact(t).labels] + [t for t in plain if redact(t).labels]
    assert not drifted, f"bench texts drifted: {drifted}"
    return {
        "chars": {
            "chat": len(CHAT),
            "chat_secret": len(CHAT_SECRET),
            "plain": len(PLAIN),
            "secret": len(SECRET),
        },
        "chat_us": median_us(redact, CHAT, repeat),
        "chat_secret_us": median_us(redact, CHAT_SECRET, repeat),
        "plain_us": median_us(redact, PLAIN, repeat),
        "secret_us": median_us(redact, SECRET, repeat),
        "repeat": repeat,
    }


if __name__ == "__main__":
    print(redaction())
