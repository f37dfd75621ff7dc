"""What the scripts that run a local Ray cluster in a child process share
(``emulate_pods.py`` here, ``tests/store_worker/multinode_cluster.py``): each prints one JSON
line per finding for its test to assert on, finds where the memory actors live, and polls
across processes for a restart."""

from __future__ import annotations

import json
import time
from typing import Any

from ray.cluster_utils import Cluster


def say(key: str, value: Any) -> None:
    print(json.dumps({key: value}), flush=True)


def placed(cluster: Cluster) -> dict[str, str]:
    """Each live memory actor's node id."""
    out = {}
    for info in cluster.global_state.actor_table(None).values():
        if str(info.get("Name")).startswith("memory-") and info.get("State") == "ALIVE":
            out[str(info["Name"])] = str(info["Address"]["NodeID"])
    return out


def wait_until(check: Any, timeout: float, every: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except Exception:  # still restarting
            pass
        time.sleep(every)  # polling a restart across processes: there is nothing to join
    return False
