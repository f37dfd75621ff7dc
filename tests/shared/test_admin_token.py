"""This user's admin token file (``shared.client.admin_token``): private, made once, kept."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shared.client import admin_token
from shared.contract.errors import InvalidArgumentError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_made_private_once_and_kept(state: Path) -> None:
    made = admin_token.ensure()
    assert made == state / "agent-memory" / "token" == admin_token.path()
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700
    token = admin_token.load(made)
    assert len(token) >= 40 and token.isascii() and token.strip() == token
    assert admin_token.load(admin_token.ensure()) == token  # kept
    assert [p.name for p in made.parent.iterdir()] == ["token"]  # no temp file left


def test_starts_racing_to_make_it_all_end_with_one_token(state: Path) -> None:
    script = "from shared.client import admin_token as a; print(a.load(a.ensure()))"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(state)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    tokens = {proc.communicate(timeout=60)[0].strip() for proc in procs}
    assert len(tokens) == 1 and tokens == {admin_token.load(admin_token.path())}


def test_rotate_replaces_it_and_a_loose_file_is_refused(state: Path) -> None:
    first = admin_token.load(admin_token.ensure())
    rotated = admin_token.rotate()
    assert admin_token.load(rotated) != first
    assert stat.S_IMODE(rotated.stat().st_mode) == 0o600
    rotated.chmod(0o640)  # a group may read it: its token may be known
    with pytest.raises(InvalidArgumentError, match="readable by other users"):
        admin_token.ensure()


def test_the_opt_out_and_a_given_token_make_no_file(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = admin_token.resolve(
        "x", "127.0.0.1", token="t", token_file=None, no_token=False, env={}
    )
    assert given == admin_token.Auth("t", None)
    opened = admin_token.resolve(
        "x", "127.0.0.1", token=None, token_file=None, no_token=True, env={}
    )
    assert opened == admin_token.Auth(None, None)
    assert "NO bearer token" in capsys.readouterr().err
    assert not admin_token.path().exists()
    with pytest.raises(InvalidArgumentError, match="MEMORY_ALLOW_NO_TOKEN=1"):
        admin_token.resolve("x", "0.0.0.0", token=None, token_file=None, no_token=True, env={})
