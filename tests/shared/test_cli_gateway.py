"""The ``memory`` CLI in its own process against a gateway: no Ray imported (its import would
be most of a one-shot command's time), the store's answers printed, the store's errors as
``error: <category>: ...`` with exit code 2.

The gateway runs in this test process over an embedded store (``build_server``, as ``memory
up`` starts it) and is recorded in the data dir's ``.state/gateway.json`` as the gateway actor
records itself; the CLI finds it through ``MEMORY_DATA_DIR``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_gateway.server import build_server
from shared.client import gateway_file
from store_worker.core import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
# runs the console script's main; says on stderr whether Ray got imported
SCRIPT = (
    "import sys\n"
    "from shared.cli import main\n"
    "code = main()\n"
    "sys.stderr.write('RAY-IMPORTED\\n' if 'ray' in sys.modules else '')\n"
    "sys.stderr.write('PYDANTIC-IMPORTED\\n' if 'pydantic' in sys.modules else '')\n"
    "raise SystemExit(code)\n"
)


class Cli:
    """``memory`` in its own process, on ``data_dir`` (``MEMORY_DATA_DIR``), or with none, in
    the folder ``cwd`` as a user ``state`` (``XDG_STATE_HOME``: where the pointer is)."""

    def __init__(
        self, data_dir: Path | None, *, cwd: Path | None = None, state: Path | None = None
    ) -> None:
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if data_dir is not None:
            self.env["MEMORY_DATA_DIR"] = str(data_dir)
        else:
            self.env.pop("MEMORY_DATA_DIR", None)
        if state is not None:
            self.env["XDG_STATE_HOME"] = str(state)
        self.env.pop("MEMORY_EMBEDDED", None)
        self.env.pop("RAY_ADDRESS", None)
        self.cwd = cwd

    def __call__(self, *argv: str, code: int = 0, lean: bool = True) -> str:
        """Run ``memory argv``; ``lean``: it must not load pydantic either (the answers come
        as views, so a read stays fast), only a verb that builds a request model may."""
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, *argv],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert "RAY-IMPORTED" not in done.stderr, f"memory {argv[0]} imported ray"
        if lean:
            assert "PYDANTIC-IMPORTED" not in done.stderr, f"memory {argv} imported pydantic"
        assert done.returncode == code, (argv, done.returncode, done.stdout, done.stderr)
        return done.stdout + done.stderr.replace("PYDANTIC-IMPORTED\n", "")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[Path, MemoryStore, str | None]]:
    data_dir = tmp_path / "served"
    store = MemoryStore(data_dir)
    server, port = build_server(store, port=0, token="tok-123")
    server.start()
    token_file = tmp_path / "token"  # as the admin token's: the record names it, the CLI reads it
    token_file.write_text("tok-123\n")
    gateway_file.write(data_dir, f"127.0.0.1:{port}", token_file)
    yield data_dir, store, "tok-123"
    server.stop(None)
    store.close()


def test_verbs_go_through_the_gateway_without_ray(
    gateway: tuple[Path, MemoryStore, str | None],
) -> None:
    data_dir, store, _ = gateway
    cli = Cli(data_dir)
    assert "saved user-prefers-tabs in bank main" in cli("save", "The user prefers tabs")
    assert store.get("user-prefers-tabs").memory.text == "The user prefers tabs"
    found = cli("recall", "tabs")
    assert "user-prefers-tabs" in found
    as_json = json.loads(cli("--json", "recall", "tabs"))
    assert as_json["memories"][0]["memory"]["id"] == "user-prefers-tabs"
    cli("rule", "set", "style", "--content", "Answer briefly.")
    assert "style" in cli("rule", "list")
    assert "main" in cli("bank", "list")
    assert "not_found" in cli("get", "no-such-memory", code=2)
    assert "error: invalid_argument:" in cli("recall", "x", "--mode", "telepathy", code=2)
    cli("delete", "user-prefers-tabs")
    assert store.list().total == 0


def test_the_outbox_verb_goes_through_the_gateway_without_ray(
    gateway: tuple[Path, MemoryStore, str | None],
) -> None:
    # Given a finished turn waiting in the outbox
    data_dir, store, _ = gateway
    store.turn_completed("s1", messages=[{"role": "user", "content": "I use tabs"}])
    # When `memory outbox` runs, then it answers through the gateway (it started a Ray
    # driver: ~1.5 s a call)
    shown = Cli(data_dir)("outbox", lean=False)
    assert shown.startswith("queued 1, leased 0, dead 0\n") and "session s1" in shown
    assert json.loads(Cli(data_dir)("outbox", "--json", lean=False))["queued"] == 1


def test_a_wrong_token_and_a_gone_gateway_are_typed_errors(
    gateway: tuple[Path, MemoryStore, str | None], tmp_path: Path
) -> None:
    data_dir, _, _ = gateway
    address = gateway_file.read(data_dir)
    assert address is not None
    (tmp_path / "wrong").write_text("wrong\n")
    gateway_file.write(data_dir, address.address, tmp_path / "wrong")
    assert "bearer token" in Cli(data_dir)("bank", "list", code=2)
    gateway_file.write(data_dir, address.address, tmp_path / "missing")  # no token to send
    assert "bearer token" in Cli(data_dir)("bank", "list", code=2)
    # a recorded gateway that does not answer: a retryable source_unavailable, exit 2
    gone = tmp_path / "gone"
    gateway_file.write(gone, "127.0.0.1:1", None)
    out = Cli(gone)("--timeout", "3", "recall", "x", code=2)
    assert "error: source_unavailable:" in out and "127.0.0.1:1" in out


def test_a_command_in_any_folder_finds_the_gateway_through_the_users_pointer(
    gateway: tuple[Path, MemoryStore, str | None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the gateway `memory up` started, pointed to in the user's state folder (as `up`
    # does), and a project folder elsewhere with no ./data/memory and no MEMORY_DATA_DIR
    data_dir, store, _ = gateway
    state, project = tmp_path / "state", tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    gateway_file.point(data_dir)
    cli = Cli(None, cwd=project, state=state)
    # When a command runs there, then it reaches the store through the gateway, without Ray
    assert "saved user-uses-zsh in bank main" in cli("save", "The user uses zsh")
    assert store.get("user-uses-zsh").memory.text == "The user uses zsh"
    # Another user (another state folder, no pointer) does not: it goes over Ray, which is
    # down here
    other = Cli(None, cwd=project, state=tmp_path / "other-state")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "--timeout", "5", "tags"],
        env={**other.env, "TMPDIR": str(tmp_path)},  # no Ray cluster to join in this TMPDIR
        cwd=project, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "no memory store is running" in done.stderr
    # the Ray way's answer, found without importing Ray: no cluster file, no cluster to join
    assert "RAY-IMPORTED" not in done.stderr


# read verbs whose output depends only on the store's contents (no clock, no pid)
PARITY = [
    ("recall", "tabs"),
    ("recall", "editor", "--limit", "2"),
    ("recall", "nothing-matches-this"),
    ("list",),
    ("list", "--all", "--page-size", "1"),
    ("list", "--include-superseded"),
    ("get", "user-prefers-tabs"),
    ("get", "user-likes-vim"),
    ("get", "vim-since"),
    ("tags",),
    ("bank", "list"),
    ("rule", "list"),
    ("describe",),
    ("capabilities",),
]


def test_answers_through_the_gateway_print_as_the_models_do(
    gateway: tuple[Path, MemoryStore, str | None],
) -> None:
    """The CLI reads the gateway's answers as views, not models (no pydantic in its process):
    every read verb prints, as text and as JSON, what it prints over the models in-process."""
    import io

    from shared.cli import run

    data_dir, store, _ = gateway
    store.save("The user prefers tabs", tags=["style"], pinned=True)
    store.save("The user likes vim as an editor", id="user-likes-vim", tags=["tools"])
    store.save("The user used emacs as an editor", id="old-editor")
    store.save("The user switched to vim in 2019", id="vim-since", occurred_at=1_546_300_800_000)
    store.supersede("old-editor", "user-likes-vim")
    store.rule_set("style", "Answer briefly.")
    cli = Cli(data_dir)
    for argv in PARITY:
        for shape in ((), ("--json",)):
            out = io.StringIO()
            assert run([*shape, *argv], store=store, out=out) == 0, argv
            got, want = cli(*shape, *argv), out.getvalue()
            if shape:  # scores decay with the clock between the two calls: compare to 1e-6
                got, want = _rounded(json.loads(got)), _rounded(json.loads(want))
            assert got == want, (shape, argv)


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value
