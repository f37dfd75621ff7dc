"""The ``.state`` folder: small JSON values the store and its sibling workers keep under
``.state/<owner>/<key>.json``, each written atomically (temp + rename).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from store_worker.storage.files import STATE_DIR, atomic_write, remove_temps

log = logging.getLogger(__name__)


class StateStore:
    """Sibling key-value checkpoints under ``.state/<owner>/<key>.json``."""

    def __init__(self, root: Path) -> None:
        self.dir = root / STATE_DIR

    def path(self, owner: str, key: str) -> Path:
        return self.dir / owner / f"{key}.json"

    def remove_stale_temps(self) -> int:
        """Remove what killed writes left (``TEMPS``); only the lock holder calls this."""
        return remove_temps(*(p for p in self.dir.glob("*") if p.is_dir()))

    def read(self, owner: str, key: str) -> object | None:
        """The value, or None when the key was never written. Raises ``OSError``,
        ``ValueError`` or ``RecursionError`` when the file is there but cannot be read (an
        I/O error, a hand edit): for a value the store must not guess (``ShardGuard``)."""
        try:
            value: object = json.loads(self.path(owner, key).read_text("utf-8"))
        except FileNotFoundError:
            return None
        return value

    def get(self, owner: str, key: str) -> object | None:
        path = self.path(owner, key)
        try:
            return self.read(owner, key)
        except (OSError, ValueError, RecursionError) as e:
            # a hand edit (bad UTF-8, not JSON, nested past the parser's depth): the owner
            # starts that key afresh; doctor's files_readable names the file until it is fixed
            log.warning("unreadable state %s: %s", path, type(e).__name__)
            return None

    def set(self, owner: str, key: str, value: object, *, durable: bool = True) -> None:
        """Write ``value`` atomically; ``durable=False`` skips the fsyncs (``atomic_write``'s
        ``sync``): for state a power loss may take back at the cost of redoing some work."""
        data = json.dumps(value, sort_keys=True).encode("utf-8")
        atomic_write(self.path(owner, key), data, sync=durable)

    def prune(self, owner: str, older_than: float) -> int:
        """Delete ``owner``'s keys last written before ``older_than`` (epoch seconds, file
        mtime); returns how many went. Only for state that is safe to forget."""
        gone = 0
        try:
            paths = list((self.dir / owner).glob("*.json"))
        except OSError:
            return 0
        for path in paths:
            try:
                if path.stat().st_mtime < older_than:
                    path.unlink()
                    gone += 1
            except OSError:
                continue  # raced with a writer or already gone: next prune sees it
        return gone
