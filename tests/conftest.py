"""Fixtures shared by every test package.

- ``clock``, ``data_dir``, ``store``: the usual trio of a store test: a fresh ``FakeClock``,
  ``tmp_path / "data"``, and a plain ``MemoryStore`` on them (closed after the test). A test
  file overrides one by defining its own (a ``clock`` with another start, a seeded ``store``);
  ``store`` picks up an overridden ``clock`` or ``data_dir``.
- ``assert_same_index``: ``assert_same_index(a, b)`` checks two ``BankIndex`` objects slot for
  slot (the bulk build, the snapshot boot and the incremental path must agree).
- ``fresh_store``: a factory of plain ``MemoryStore`` objects on ``tmp_path`` with a ``FakeClock``
  (no Ray): ``store = fresh_store(recall_limit=5)``; ``store.clock.advance(days=3)``.
- ``shards``: a ``ShardedStoreClient`` over two in-process shards on ``tmp_path / "data"``
  (closed after the test).
- ``user_state`` (autouse, session): ``XDG_STATE_HOME`` in a temp folder, so nothing a test
  runs (``memory up``, a hook's log, the gateway pointer ``shared.client.gateway_file.point``) reads
  or writes the state folder of the user running the tests.
- ``ray_cluster``: one Ray cluster for the whole session (starting a cluster per module
  costs ~5 s each; reuse actors instead). Isolated from any developer cluster: its own temp dir
  (so ``address="auto"`` never finds it), a temporary ``HOME`` and ``RAY_AUTH_MODE=disabled``
  (no token files are read or written). Mark tests that use it ``@pytest.mark.ray``.
- ``store_actor``: the named detached ``memory-store`` actor in that cluster, over a
  session-scoped temp data dir, as a ``StoreClient``. Share it: use a bank of your own per test
  (``bank=unique_bank``) rather than a new actor. Anything that starts ``memory-store`` in the
  session cluster gets this same actor (``get_if_exists``), so start it only through here.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from shared.contract.clock import FakeClock

if TYPE_CHECKING:
    from shared.client.sharded import ShardedStoreClient
    from store_worker.core import MemoryStore
    from store_worker.recall.index import BankIndex

_banks = itertools.count(1)

# Tests never touch the network: litellm would fetch its model price map at import otherwise.
# (The Makefile exports it too; this covers a bare `pytest`.)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session", autouse=True)
def user_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    saved = os.environ.get("XDG_STATE_HOME")
    state = tmp_path_factory.mktemp("xdg-state")
    os.environ["XDG_STATE_HOME"] = str(state)
    yield state
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(data_dir: Path, clock: FakeClock) -> Iterator[MemoryStore]:
    from store_worker.core import MemoryStore  # imported here: see fresh_store

    s = MemoryStore(data_dir, clock=clock)
    yield s
    s.close()


def _assert_same_index(a: BankIndex, b: BankIndex) -> None:
    """Slot for slot: keys, columns, postings, statistics, term lists, interned table."""
    import numpy as np

    assert a.keys == b.keys and a.slot_of == b.slot_of
    assert (a.n_counted, a.total_len, a.dead) == (b.n_counted, b.total_len, b.dead)
    assert dict(a.df) == dict(b.df)
    assert a._interned == b._interned
    for name in a.cols:
        np.testing.assert_array_equal(a.col(name), b.col(name), err_msg=name)
        assert a.col(name).dtype == b.col(name).dtype, name
    for table in ("terms", "entities", "tags"):
        ta, tb = getattr(a, table), getattr(b, table)
        assert set(ta) == set(tb), table
        for key in ta:
            for x, y in zip(ta[key].view(), tb[key].view(), strict=True):
                np.testing.assert_array_equal(x, y, err_msg=f"{table}[{key}]")
    for slot in np.flatnonzero(a.col("counted")).tolist():
        assert sorted(a._terms_of(slot)) == sorted(b._terms_of(slot))


@pytest.fixture
def assert_same_index() -> Callable[[BankIndex, BankIndex], None]:
    return _assert_same_index


LineHandler = Callable[[str, bool], bool]


def _run_then_sigkill(script: str, args: list[str], *, acks: int, on_line: LineHandler) -> None:
    """Run ``python -c script *args`` until ``on_line`` has counted ``acks`` lines, SIGKILL it,
    then hand over what it had already printed. ``on_line(line, whole)`` returns whether the
    line counts; ``whole`` is False only for a last line the kill cut before its newline
    (unbuffered ``print`` writes its text and its end separately)."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None and child.stderr is not None
    seen = 0
    err = ""
    try:
        while seen < acks:
            line = child.stdout.readline()
            if not line:
                break
            seen += on_line(line.rstrip("\n"), True)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        *whole, cut = child.stdout.read().split("\n")
        for line in whole:
            on_line(line, True)
        if cut:
            on_line(cut, False)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        err = child.stderr.read()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL, err
    assert seen >= acks, f"child died early: {err}"


@pytest.fixture
def sigkill_child() -> Callable[..., None]:
    """Run a child script until it acknowledged enough, then SIGKILL it (the crash tests)."""
    return _run_then_sigkill


@pytest.fixture
def fresh_store(tmp_path: Path) -> Iterator[Callable[..., MemoryStore]]:
    """``create(*, clock=None, embedder=None, data_dir=None, **settings) -> MemoryStore``."""
    # Imported here: a half-edited core must fail the tests that use it, not the whole run.
    from shared.contract.config import StoreSettings
    from store_worker.core import MemoryStore

    made: list[MemoryStore] = []

    def create(
        *,
        clock: FakeClock | None = None,
        embedder: Any = None,
        data_dir: Path | None = None,
        **settings: Any,
    ) -> MemoryStore:
        folder = data_dir or tmp_path / f"data-{len(made)}"
        store = MemoryStore(
            settings=StoreSettings(data_dir=str(folder), **settings),
            clock=clock or FakeClock(),
            embedder=embedder,
        )
        made.append(store)
        return store

    yield create
    for store in made:
        store.close()


@pytest.fixture
def shards(tmp_path: Path) -> Iterator[ShardedStoreClient]:
    from shared.client.sharded import ShardedStoreClient, open_embedded_shards
    from shared.contract.config import StoreSettings

    store = open_embedded_shards(StoreSettings(data_dir=str(tmp_path / "data")), 2)
    assert isinstance(store, ShardedStoreClient)
    yield store
    store.close()


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``ray`` itself, initialised once: 2 CPUs, no dashboard, namespace ``memory``."""
    import ray

    # /tmp directly: Ray's unix socket paths (<temp>/session_*/sockets/...) must stay < 108 chars.
    temp_dir = tempfile.mkdtemp(prefix="ray-t-", dir="/tmp")
    home = tmp_path_factory.mktemp("ray-home")
    saved_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    os.environ["RAY_AUTH_MODE"] = "disabled"  # kept: later Ray calls in this process read it
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            namespace="memory",
            logging_level=logging.ERROR,
            _temp_dir=temp_dir,
        )
    finally:
        if saved_home is not None:  # the workers already have the temp HOME
            os.environ["HOME"] = saved_home
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def store_actor(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A ``StoreClient`` over the session's ``memory-store`` actor (its data dir is temp)."""
    from shared.client.ray import StoreClient
    from store_worker.spec import WORKER

    data_dir = tmp_path_factory.mktemp("store-actor-data")
    handle = WORKER.start({"MEMORY_DATA_DIR": str(data_dir)})
    return StoreClient(handle, timeout=60)


@pytest.fixture
def unique_bank() -> str:
    """A bank name no other test in the session uses (the shared actor keeps its data)."""
    return f"t{next(_banks)}-{os.getpid()}"
