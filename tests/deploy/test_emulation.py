"""deploy/raycluster.yaml's pods as local Ray nodes, and its documented commands run verbatim.

``emulate_pods.py`` runs in a child process of its own session (this session's driver may be
joined to the session cluster already): a head with the manifest's ``--num-cpus=0``, a store
node and a siblings node with the manifest's resources, the head's environment and KubeRay's
token auth; then the README's submit steps, the head's own bootstrap line, and the store's
node killed and started again. Its own temp dir, HOME and address file; every process it
started is gone when the test returns (its session is swept by id). ~60-90 s here.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.manifests import MANIFESTS, ROOT

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SCRIPT = Path(__file__).with_name("emulate_pods.py")
MANIFEST = MANIFESTS[0]  # raycluster.yaml; the sharded layout is tests/store_worker's multinode


def _session_pids(sid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.getsid(int(entry.name)) == sid:
                    pids.append(int(entry.name))
    return pids


def _end_session(sid: int) -> list[int]:
    """SIGKILL what is left of the session the child led (worker processes of a cluster that
    is shutting down, or all of it after a timeout); the pids still there after, if any."""
    for pid in _session_pids(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _session_pids(sid) and time.monotonic() < deadline:
        time.sleep(0.1)  # processes ending: nothing to wait on but their pids
    return _session_pids(sid)


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("deploy-emulation")
    ray_tmp = tempfile.mkdtemp(prefix="ray-dp-", dir="/tmp")  # socket paths stay < 108 chars
    (work / "home").mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MEMORY_"))},
        "HOME": str(work / "home"),
        "RAY_TMPDIR": ray_tmp,  # its address file and sessions: never the machine's /tmp/ray
        "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),  # "installed": the image's role
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # KubeRay's authOptions (mode: token) set these in every Ray container
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    child = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(work), str(MANIFEST)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # everything it starts shares its session: swept below
    )
    try:
        stdout, stderr = child.communicate(timeout=170)
    except subprocess.TimeoutExpired:
        child.kill()
        stdout, stderr = child.communicate()
    finally:
        left = _end_session(child.pid)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    out: dict[str, Any] = {"left_behind": left}
    for line in stdout.splitlines():
        if line.startswith("{"):
            out.update(json.loads(line))
    assert child.returncode == 0, stderr[-3000:]
    return out


@pytest.mark.timeout(200)
def test_the_documented_submit_starts_every_worker(findings: dict[str, Any]) -> None:
    submit = findings["submit"]
    assert submit["code"] == 0, submit["tail"]
    assert submit["started"] == ["consolidator", "extractor", "grpc", "store"]


@pytest.mark.timeout(200)
def test_each_actor_runs_on_the_pod_meant_for_it(findings: dict[str, Any]) -> None:
    assert findings["placement"] == {
        "memory-store": "store",
        "memory-extractor": "siblings",
        "memory-consolidator": "siblings",
        "memory-grpc": "siblings",
    }


@pytest.mark.timeout(200)
def test_they_answer_and_memory_recalls_through_the_gateway(findings: dict[str, Any]) -> None:
    answers = findings["answers"]
    assert set(answers["pings"].values()) == {"pong"}
    assert answers["save"] == answers["recall"] == 0, answers["err"]
    assert answers["recalled"] and answers["via_gateway"]


@pytest.mark.timeout(200)
def test_the_head_s_bootstrap_rerun_starts_nothing_new(findings: dict[str, Any]) -> None:
    assert findings["rerun"]["code"] == 0, findings["rerun"]["tail"]
    assert findings["rerun"]["same_actors"]


@pytest.mark.timeout(200)
def test_the_store_comes_back_on_its_new_pod_after_its_pod_is_killed(
    findings: dict[str, Any],
) -> None:
    restart = findings["restart"]
    assert restart["noticed"] and restart["back"]
    assert restart["placement"]["memory-store"] == "store"
    assert all(
        restart["placement"][a] == "siblings" for a in restart["placement"] if a != "memory-store"
    )
    assert restart["siblings_kept"] and restart["recalled"]


@pytest.mark.timeout(200)
def test_nothing_is_left_running(findings: dict[str, Any]) -> None:
    assert findings["total_s"] < 150
    assert findings["left_behind"] == []
