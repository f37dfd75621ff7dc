"""``open_store_for``: the one place that picks the store an integration talks to."""

from __future__ import annotations

from pathlib import Path

import pytest

import shared.client
from integrations.store import close, open_store_for
from shared import errors


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
        raise errors.SourceUnavailableError(shared.client.NO_STORE_HINT)

    monkeypatch.setattr(shared.client, "connect", down)
    with pytest.raises(errors.SourceUnavailableError, match="pass --data-dir DIR") as caught:
        open_store_for(None)
    assert caught.value.retryable
