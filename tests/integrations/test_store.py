"""``open_store_for``: the one place that picks the store an integration talks to."""

from __future__ import annotations

from pathlib import Path

import pytest

import shared.client.ray
from integrations.store import close, open_store_for
from shared.contract import errors


def test_a_data_dir_is_the_embedded_store_and_its_lock(tmp_path: Path) -> None:
    store = open_store_for(str(tmp_path / "data"))
    try:
        store.save("The staging database is called pelican")
        with pytest.raises(errors.DataDirLockedError, match="in use by pid"):
            open_store_for(str(tmp_path / "data"))
    finally:
        close(store)
    again = open_store_for(str(tmp_path / "data"))  # closing released the lock
    try:
        assert again.recall("staging database").memories[0].memory.text.endswith("pelican")
    finally:
        close(again)


def test_no_running_store_says_how_to_go_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*args: object, **kwargs: object) -> None:
        raise errors.SourceUnavailableError(shared.client.ray.NO_STORE_HINT)

    monkeypatch.setattr(shared.client.ray, "join_cluster", down)
    with pytest.raises(errors.SourceUnavailableError, match="pass --data-dir DIR") as caught:
        open_store_for(None)
    assert caught.value.retryable


def test_an_embedded_opener_waits_for_a_lock_that_is_let_go(tmp_path: Path) -> None:
    """Two hooks of one agent overlap by a moment: the second waits for the data dir's lock
    (``lock_wait_s``) instead of losing its turn; past the wait it is refused, typed."""
    import threading

    first = open_store_for(str(tmp_path))
    with pytest.raises(errors.DataDirLockedError):
        open_store_for(str(tmp_path), lock_wait_s=0.1)
    threading.Timer(0.3, close, args=(first,)).start()

    second = open_store_for(str(tmp_path), lock_wait_s=10)

    assert second.save("the second hook's turn").memory.id
    close(second)
