"""deploy/raycluster.yaml's pods as local Ray nodes, run as a child process by
``test_emulation.py`` (this session's driver may be joined to the session cluster already, and
one driver joins one cluster). It prints one JSON line per finding; the test asserts on them.

    python emulate_pods.py <work dir> <manifest>

Each pod is a raylet started with what KubeRay would pass to its ``ray start`` (the group's
``rayStartParams``: CPUs and custom resources), in the head container's environment (literal
values; a Secret's value is made up here; /data/memory is a folder under <work dir>), with
token auth on as KubeRay's ``authOptions`` sets it (RAY_AUTH_MODE/RAY_AUTH_TOKEN in every
container). Then the documented submit steps run verbatim in bash, with ``kubectl`` a stub
that prints the token Secret and RAY_ADDRESS at the head's dashboard (what the port-forward
gives).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from tests.deploy.manifests import (
    HEAD,
    env_of,
    groups,
    head_bootstrap_command,
    offers,
    submit_block,
)
from tests.deploy.ray_child import placed, say, wait_until

NAMESPACE = "memory"
SIBLINGS = ("memory-extractor", "memory-consolidator", "memory-grpc")
FACT = "The deploy emulation prefers tabs over spaces"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_args(group: dict[str, Any]) -> dict[str, Any]:
    offer = offers(group)
    cpus = int(offer.pop("CPU", 0))
    return {"num_cpus": cpus, "resources": offer, "object_store_memory": 80 * 1024 * 1024}


def pod_env(manifest: Path, work: Path) -> dict[str, str]:
    """The head container's environment: literal values, the data dir moved under ``work``,
    each Secret's value made up. (What KubeRay's authOptions add, RAY_AUTH_MODE and
    RAY_AUTH_TOKEN, the test sets before this process starts: Ray reads them at import.)"""
    out = {}
    for name, entry in env_of(groups(manifest)[HEAD]).items():
        value = entry.get("value")
        if value is None:  # valueFrom a Secret (the gateway's bearer token)
            value = secrets.token_hex(16)
        out[name] = value.replace("/data/memory", str(work / "data" / "memory"))
    return out


def kubectl_stub(work: Path, auth_token: str) -> Path:
    """``kubectl get secret memory -o jsonpath='{.data.auth_token}'``: the Secret KubeRay made."""
    bin_dir = work / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "kubectl"
    encoded = base64.b64encode(auth_token.encode()).decode()
    stub.write_text(
        "#!/bin/sh\n"
        'if [ "$*" = "get secret memory -o jsonpath={.data.auth_token}" ]; then\n'
        f"  printf %s {encoded}\n"
        "else\n"
        '  echo "kubectl stub: unexpected: $*" >&2; exit 1\n'
        "fi\n"
    )
    stub.chmod(0o755)
    return bin_dir


def run_memory(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    memory = Path(sys.executable).with_name("memory")
    return subprocess.run(
        [str(memory), *argv], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def main(work: Path, manifest: Path) -> None:
    started = time.monotonic()
    auth_token = os.environ["RAY_AUTH_TOKEN"]
    assert os.environ["RAY_AUTH_MODE"] == "token"
    env = pod_env(manifest, work)
    os.environ.update(env)  # every raylet (and so every actor's process) inherits it
    pods = groups(manifest)
    dashboard = free_port()
    head = {
        **node_args(pods[HEAD]),
        "include_dashboard": True,
        "dashboard_host": "127.0.0.1",
        "dashboard_port": dashboard,
        "dashboard_agent_listen_port": free_port(),
        # a removed node is noticed in ~1 s, not Ray's default ~30 s
        "_system_config": {"health_check_period_ms": 300, "health_check_failure_threshold": 3},
    }
    cluster = Cluster(initialize_head=True, head_node_args=head)
    assert cluster.head_node is not None
    try:
        nodes = {name: cluster.add_node(**node_args(g)) for name, g in pods.items() if name != HEAD}
        node_ids = {name: n.node_id for name, n in nodes.items()} | {
            HEAD: cluster.head_node.node_id
        }
        say("nodes", {"started_s": round(time.monotonic() - started, 1), "count": len(node_ids)})

        # The documented steps, verbatim.
        shell = {
            **os.environ,
            "PATH": os.pathsep.join(
                [
                    str(kubectl_stub(work, auth_token)),
                    str(Path(sys.executable).parent),
                    *os.environ["PATH"].split(os.pathsep),
                ]
            ),
            "RAY_ADDRESS": f"http://127.0.0.1:{dashboard}",  # the port-forward's end
        }
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):  # the user's shell sets these itself
            shell.pop(name)
        steps = "\n".join(["set -e", *submit_block(manifest.read_text("utf-8"))])
        done = subprocess.run(
            ["bash", "-c", steps],
            env=shell,
            cwd=work,  # not the repository: only the installed code may run
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        say(
            "submit",
            {
                "code": done.returncode,
                "started": sorted(
                    line.split()[1]
                    for line in done.stdout.splitlines()
                    if line.startswith("started ")
                ),
                "tail": (done.stdout + done.stderr)[-1500:] if done.returncode else "",
            },
        )
        if done.returncode:
            return

        ray.init(
            address=cluster.address,
            namespace=NAMESPACE,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
        where = placed(cluster)
        say(
            "placement",
            {a: _node_name(node_ids, where.get(a)) for a in ("memory-store", *SIBLINGS)},
        )

        # Answers: every actor pings; `memory` in the siblings pod saves and recalls through
        # the gateway (its record is in that pod's <data dir>/.state).
        pings = {
            a: ray.get(ray.get_actor(a).ping.remote(), timeout=30)
            for a in ("memory-store", *SIBLINGS)
        }
        in_pod = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        in_pod["MEMORY_DATA_DIR"] = env["MEMORY_DATA_DIR"]
        in_pod["RAY_TMPDIR"] = str(work / "no-ray")  # no cluster to fall back on: gateway only
        saved = run_memory(in_pod, "save", FACT)
        recalled = run_memory(in_pod, "recall", "tabs or spaces")
        record = json.loads(
            (Path(env["MEMORY_DATA_DIR"]) / ".state" / "gateway.json").read_text("utf-8")
        )
        say(
            "answers",
            {
                "pings": pings,
                "save": saved.returncode,
                "recall": recalled.returncode,
                "recalled": FACT in recalled.stdout,
                "via_gateway": record["address"].rsplit(":", 1)[0] == "127.0.0.1",
                "err": (saved.stderr + recalled.stderr)[-800:],
            },
        )

        # The head's own bootstrap (what runs on every head start) finds them all: nothing new.
        before = placed(cluster)
        again = subprocess.run(
            [*head_bootstrap_command(manifest)[:3], "--wait-s", "30"],
            env={**os.environ, "RAY_ADDRESS": cluster.address},  # KubeRay sets it on the head
            cwd=work,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        say(
            "rerun",
            {
                "code": again.returncode,
                "same_actors": placed(cluster) == before,
                "tail": again.stderr[-800:] if again.returncode else "",
            },
        )

        # The store's pod dies and comes back (same volume: the same folder here).
        cluster.remove_node(nodes["store"], allow_graceful=False)
        gone = wait_until(lambda: "memory-store" not in placed(cluster), 30)
        killed_at = time.monotonic()
        store2 = cluster.add_node(**node_args(pods["store"]))
        node_ids["store"] = store2.node_id
        back = wait_until(
            lambda: str(ray.get(ray.get_actor("memory-store").ping.remote(), timeout=5)) == "pong",
            60,
        )
        after = placed(cluster)
        recalled = run_memory(in_pod, "recall", "tabs or spaces")
        say(
            "restart",
            {
                "noticed": gone,
                "back": back,
                "back_s": round(time.monotonic() - killed_at, 1),
                "placement": {
                    a: _node_name(node_ids, after.get(a)) for a in ("memory-store", *SIBLINGS)
                },
                "recalled": FACT in recalled.stdout,
                "siblings_kept": all(after.get(a) == before.get(a) for a in SIBLINGS),
            },
        )
    finally:
        ray.shutdown()
        cluster.shutdown()
        say("total_s", round(time.monotonic() - started, 1))


def _node_name(node_ids: dict[str, str], node_id: str | None) -> str | None:
    return next((name for name, nid in node_ids.items() if nid == node_id), None)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
