"""Shards and replicas on a real multi-node Ray cluster.

``multinode_cluster.py`` runs in a child process (this session's driver is joined to the
session cluster already): two raylets with ``memory_store_0`` / ``memory_store_1``, two shards,
node A removed and added back, two extractor replicas on two nodes. One small cluster, ~45 s on
this machine; it has its own temp dir, HOME and address file, and shuts down before returning.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("multinode_cluster.py")


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("multinode")
    ray_tmp = tempfile.mkdtemp(prefix="ray-mn-", dir="/tmp")  # socket paths stay < 108 chars
    env = {
        **os.environ,
        "HOME": str(work),
        "RAY_TMPDIR": ray_tmp,  # its address file and sessions: never the machine's /tmp/ray
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), *sys.path]),
    }
    try:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), str(work)],
            env=env,
            capture_output=True,
            text=True,
            timeout=110,
            check=False,
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    out: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            out.update(json.loads(line))
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.timeout(130)
def test_each_shard_runs_on_the_node_with_its_resource(findings: dict[str, Any]) -> None:
    assert findings["placement"] == {"shard0": True, "shard1": True}
    assert findings["spread"]["on0"] > 0 and findings["spread"]["on1"] > 0


@pytest.mark.timeout(130)
def test_a_lost_node_takes_only_its_shards_banks(findings: dict[str, Any]) -> None:
    down = findings["node_down"]
    assert down["noticed"] and down["others_serve"]
    assert down["its_banks"] == ["retryable", "retryable"]  # a read and a write, both typed


@pytest.mark.timeout(130)
def test_the_returning_node_restarts_its_shard_with_every_acked_write(
    findings: dict[str, Any],
) -> None:
    assert findings["node_back"] == {"restarted": True, "on_its_node": True, "all_acked": True}


@pytest.mark.timeout(130)
def test_replicas_on_two_nodes_do_each_job_once(findings: dict[str, Any]) -> None:
    replicas = findings["replicas"]
    assert replicas["nodes"] == 2 and replicas["done"] == 12 and replicas["queued"] == 0
    assert replicas["memories"] == 13  # the bank's first fact and one per job
    assert replicas["corroboration"] == [0]  # a job run twice would have reinforced its fact
