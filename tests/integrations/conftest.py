"""Fixtures of the integrations' tests.

- ``memory_env``: the environment a ``memory`` subprocess needs to find this checkout and its
  ``agent_memory.commands`` entry point. The shared venv's installed metadata may predate the
  entry point (it is installed from another checkout), so when the group lacks
  ``integrations``, a minimal ``*.dist-info`` declaring it is written to a temp folder and put
  on ``sys.path`` / ``PYTHONPATH``; once the package is reinstalled it is not needed and not made.
- ``memory_cmd``: ``[python, -c, <run shared.cli.main>]``, to which a test appends arguments.
- ``embedded``: an embedded ``MemoryStore`` (no Ray) for in-process tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
MAIN = "import sys; from shared.cli import main; sys.exit(main())"


def _declared() -> bool:
    return any(
        ep.name == "integrations" for ep in metadata.entry_points(group="agent_memory.commands")
    )


@pytest.fixture(scope="session")
def memory_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    paths = [str(ROOT)]
    if not _declared():
        site = tmp_path_factory.mktemp("entry-points")
        dist = site / "agent_memory_integrations_test-0.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: agent-memory-integrations-test\nVersion: 0.0\n"
        )
        (dist / "entry_points.txt").write_text(
            "[agent_memory.commands]\nintegrations = integrations.cli:COMMANDS\n"
        )
        sys.path.append(str(site))
        paths.append(str(site))
    assert _declared()
    inherited = os.environ.get("PYTHONPATH")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths + ([inherited] if inherited else []))
    env.pop("MEMORY_EMBEDDED", None)
    env.pop("MEMORY_HOOK_BANK", None)
    return env


@pytest.fixture
def memory_cmd(memory_env: dict[str, str]) -> list[str]:
    return [sys.executable, "-c", MAIN]


@pytest.fixture
def embedded(fresh_store: Any) -> Iterator[Any]:
    yield fresh_store()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project folder ``Ship-It`` with the recorded transcript beside it."""
    root = tmp_path / "Ship-It"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    transcript = (GOLDEN / "transcript.jsonl").read_text("utf-8")
    (tmp_path / "transcript.jsonl").write_text(transcript.replace("CWD", str(root)), "utf-8")
    return root


@pytest.fixture(params=["file", "grpc"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A ``connect`` target an adapter opens itself: an embedded data dir (``file:DIR``), or
    a real gateway on a loopback port serving a store on its own data dir (``grpc://``)."""
    if request.param == "file":
        yield f"file:{tmp_path / 'data'}"
        return
    from grpc_gateway.server import build_server
    from store_worker.core import MemoryStore

    served = MemoryStore(tmp_path / "served")
    server, port = build_server(served, port=0)
    server.start()
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        server.stop(None)
        served.close()
