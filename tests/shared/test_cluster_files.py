"""Where the CLI looks for the local Ray cluster, without importing Ray
(``shared.client.lifecycle``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared.client import lifecycle


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"TMPDIR": "/var/tmp/x"},
        {"RAY_TMPDIR": "/srv/ray-tmp", "TMPDIR": "/var/tmp/x"},
    ],
)
def test_rays_rule_read_here_names_the_file_ray_names(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray._common.utils import get_ray_address_file

    for name in ("RAY_TMPDIR", "TMPDIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert lifecycle.ray_temp_dir() / "ray_current_cluster" == Path(get_ray_address_file(None))
    assert lifecycle.address_file() == Path(get_ray_address_file(None))


def test_a_cli_call_that_finds_no_cluster_never_imports_ray(tmp_path: Path) -> None:
    # Given no cluster (an empty Ray temp folder), when `memory status` runs, then it answers
    # "not running" without paying Ray's import (~0.9 s of a CLI call)
    probe = (
        "import sys\n"
        "from shared.cli import main\n"
        "code = main(['status'])\n"
        "print('ray imported' if 'ray' in sys.modules else 'ray not imported', code)\n"
    )
    env = {**os.environ, "RAY_TMPDIR": str(tmp_path), "RAY_ADDRESS": ""}
    env.pop("RAY_ADDRESS")
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip().splitlines()[-1] == "ray not imported 2", done.stdout + done.stderr
    assert "no memory store is running" in done.stderr
