"""The installed package is not shadowed by a folder named ``shared`` in the working directory.

The default editable install's finder runs after the path scan, so ``import shared`` from a
folder holding ``shared/`` got that folder (a namespace package): a script run there failed
with ``FileNotFoundError: .../shared/credentials.toml``. The Makefile installs in editable compat
mode (a .pth path entry): the project's regular package is found by the path scan itself.

These tests run the interpreter the tests run in, without this checkout on ``PYTHONPATH``: they
check the project as installed in it (``make install`` installs it again once the mode changed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import shared, shared.contract.api; print(shared.__file__)"


@pytest.fixture
def shadowing(tmp_path: Path) -> Path:
    """A working folder holding an empty ``shared/`` (with a ``credentials.toml``)."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "credentials.toml").write_text("")
    return tmp_path


def _installed_env() -> dict[str, str]:
    try:
        metadata.distribution("agent-memory")
    except metadata.PackageNotFoundError:
        pytest.skip("agent-memory is not installed in this interpreter")
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_import_shared_from_a_folder_holding_shared_gets_the_package(shadowing: Path) -> None:
    env = _installed_env()
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=shadowing, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = done.stdout.strip()
    assert found.endswith(os.path.join("shared", "__init__.py")), found  # not the namespace
    assert not found.startswith(str(shadowing))
    # and the package's data files come from the package
    said = subprocess.run(
        [sys.executable, "-c", "from shared.redact import redact; print(redact('x').text)"],
        cwd=shadowing, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (said.returncode, said.stdout.strip()) == (0, "x"), said.stderr


def test_memory_help_from_a_folder_holding_shared(shadowing: Path) -> None:
    env = _installed_env()
    script = Path(sys.executable).with_name("memory")
    runs = [[sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]]
    if script.exists():
        runs.append([str(script)])
    for cmd in runs:
        done = subprocess.run(
            [*cmd, "--help"], cwd=shadowing, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "usage: memory" in done.stdout


def test_the_makefile_installs_editable_in_compat_mode() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert re.search(r"^EDITABLE := --config-settings editable_mode=compat$", makefile, re.M)
    editable = [line for line in makefile.splitlines() if "pip install" in line and " -e " in line]
    assert len(editable) == 2  # the runtime install and the dev install
    assert all("$(EDITABLE)" in line for line in editable)
