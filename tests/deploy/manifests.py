"""Reading deploy/'s manifests as the checks and the emulation need them: the documents, each
group's pod, what ``ray start`` is told to offer, and the documented commands."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MANIFESTS = [DEPLOY / "raycluster.yaml", DEPLOY / "raycluster-sharded.yaml"]
SCHEMA = Path(__file__).with_name("kuberay") / "rayclusters.ray.io-v1.7.1.schema.yaml"
HEAD = "head"  # the head group's name here (KubeRay labels it `headgroup`)


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text("utf-8")) if d]


def of_kind(path: Path, kind: str) -> list[dict[str, Any]]:
    return [d for d in documents(path) if d.get("kind") == kind]


def raycluster(path: Path) -> dict[str, Any]:
    (found,) = of_kind(path, "RayCluster")
    return found


def groups(path: Path) -> dict[str, dict[str, Any]]:
    """Every group by name, the head as ``HEAD``: ``{"rayStartParams", "template", ...}``."""
    spec = raycluster(path)["spec"]
    out = {HEAD: spec["headGroupSpec"]}
    for group in spec.get("workerGroupSpecs", []):
        out[group["groupName"]] = group
    return out


def container(group: dict[str, Any]) -> dict[str, Any]:
    """The Ray container: KubeRay requires it to be the pod's first."""
    first: dict[str, Any] = group["template"]["spec"]["containers"][0]
    return first


def env_of(group: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Ray container's environment, by name (each entry as written)."""
    return {e["name"]: e for e in container(group).get("env", [])}


def offers(group: dict[str, Any]) -> dict[str, float]:
    """What ``ray start`` on this group's pods declares: CPUs and custom resources.

    KubeRay passes ``rayStartParams`` as ``--key=value`` on a shell command line, so the
    ``resources`` value is unquoted by the shell first (hence the escaped JSON in YAML)."""
    params = group.get("rayStartParams", {})
    out: dict[str, float] = {}
    if "num-cpus" in params:
        out["CPU"] = float(params["num-cpus"])
    if "resources" in params:
        (text,) = shlex.split(params["resources"])
        out.update({k: float(v) for k, v in json.loads(text).items()})
    return out


def head_bootstrap_command(path: Path) -> list[str]:
    """The ``python -m deploy.bootstrap ...`` the head's command runs before ``ray start``."""
    script = " ".join(container(groups(path)[HEAD])["args"])
    found = re.search(r"(python -m deploy\.bootstrap[^&;]*)&", script)
    assert found, f"the head of {path.name} runs no bootstrap: {script!r}"
    return shlex.split(found.group(1))


def submit_block(text: str) -> list[str]:
    """The documented submit steps: from the ``export RAY_AUTH_MODE=token`` line through the
    ``ray job submit`` line, comment markers and indentation removed (the same lines must
    appear in the manifests, README and docs/SCALING.md)."""
    lines = [re.sub(r"^#?\s*", "", line).rstrip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line == "export RAY_AUTH_MODE=token")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("ray job submit"))
    return lines[start : end + 1]
