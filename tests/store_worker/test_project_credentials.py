"""A project path holding a URL with a password is refused, whatever normalisation does to it.

``normpath`` collapses the ``//`` of ``postgres://user:pw@host``, which hid the credential from
the check when it ran after normalisation; it now runs on the value as given and on the
normalised path, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.contract.errors import InvalidArgumentError
from store_worker.core import MemoryStore
from store_worker.storage import validate as v

PROJECTS = {
    "postgres": "/srv/app/postgres://appuser:Pg5ecretPa55@db.example:5432/app",
    "redis, no user": "/srv/app/redis://:pw@cache.example:6379",
    "mysql": "/srv/app/mysql://u:p@h",
    "https token": "/srv/app/https://user:token@host/x",
    "already squashed": "/srv/app/mysql:/u:p@h",
    "windows drive": "C:\\work\\postgres://appuser:Pg5ecretPa55@db.example",
    "windows, slashes": "D:/src/mysql://u:p@h/db",
    "windows, squashed": "C:\\work\\mysql:\\u:p@h",
}


@pytest.fixture
def data_dir_bytes(
    dir_bytes: Callable[[Path], dict[str, bytes | None]],
) -> Callable[[MemoryStore], dict[str, bytes | None]]:
    def read(store: MemoryStore) -> dict[str, bytes | None]:
        return {k: b for k, b in dir_bytes(store.root).items() if not k.startswith(".lock")}

    return read


@pytest.mark.parametrize("project", list(PROJECTS.values()), ids=list(PROJECTS))
def test_validation_refuses_a_project_url_with_credentials(project: str) -> None:
    with pytest.raises(InvalidArgumentError, match="credential") as refused:
        v.project_path(project)
    assert "Pg5ecretPa55" not in refused.value.message


@pytest.mark.parametrize("project", list(PROJECTS.values()), ids=list(PROJECTS))
def test_save_with_a_credential_project_is_refused_and_writes_nothing(
    store: MemoryStore,
    data_dir_bytes: Callable[[MemoryStore], dict[str, bytes | None]],
    project: str,
) -> None:
    store.save("something before")
    before = data_dir_bytes(store)
    with pytest.raises(InvalidArgumentError, match="credential"):
        store.save("the deploy runs nightly", scope="project", project=project)
    assert data_dir_bytes(store) == before
    assert all("Pg5ecretPa55" not in str(b) for b in before.values())


@pytest.mark.parametrize("project", list(PROJECTS.values()), ids=list(PROJECTS))
def test_recall_with_a_credential_project_is_refused_and_writes_nothing(
    store: MemoryStore,
    data_dir_bytes: Callable[[MemoryStore], dict[str, bytes | None]],
    project: str,
) -> None:
    store.save("something before")
    before = data_dir_bytes(store)
    with pytest.raises(InvalidArgumentError, match="credential"):
        store.recall("deploy", project=project)
    assert data_dir_bytes(store) == before


@pytest.mark.parametrize(
    "project",
    ["/srv/app", "/home/u/a:b/c@d", "C:\\work\\a:b", "/srv//app/", "/srv/app/http://host/x"],
)
def test_ordinary_project_paths_still_pass(store: MemoryStore, project: str) -> None:
    res = store.save("the deploy runs nightly", scope="project", project=project)
    assert res.memory.project == v.project_path(project)
