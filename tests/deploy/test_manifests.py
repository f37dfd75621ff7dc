"""Offline checks of deploy/'s KubeRay manifests: the pinned RayCluster schema, and the rules a
cluster only shows when it is too late (a volume uid 1000 cannot write, a gateway on loopback,
an actor that fits on the head or next to the store's files).

No Kubernetes runs here; ``test_emulation.py`` runs the same layout as local Ray nodes.
"""

from __future__ import annotations

import copy
import fnmatch
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.manifests import (
    DEPLOY,
    HEAD,
    MANIFESTS,
    ROOT,
    SCHEMA,
    container,
    documents,
    env_of,
    groups,
    head_bootstrap_command,
    of_kind,
    offers,
    raycluster,
    submit_block,
)

GATEWAY_PORT = 50051
DOCS = [ROOT / "README.md", ROOT / "docs" / "SCALING.md"]


def _closed(node: Any) -> Any:
    """The CRD schema as JSON Schema that refuses unknown fields (``kubectl --validate=strict``):
    an object with ``properties`` and no ``additionalProperties`` gets ``false``."""
    if isinstance(node, list):
        return [_closed(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _closed(v) for k, v in node.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    raw = yaml.safe_load(SCHEMA.read_text("utf-8"))
    schema = {**_closed(raw["openAPIV3Schema"]), "definitions": _closed(raw["definitions"])}
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(validator: jsonschema.Draft7Validator, doc: dict[str, Any]) -> list[str]:
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)
    ]


def test_the_schema_names_its_source_release_and_licence() -> None:
    head = SCHEMA.read_text("utf-8").split("openAPIV3Schema:")[0]
    assert "https://github.com/ray-project/kuberay" in head
    assert "ray-operator/config/crd/bases/ray.io_rayclusters.yaml" in head
    assert "v1.7.1" in head and "Apache License 2.0" in head


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_raycluster_passes_the_pinned_kuberay_schema(
    path: Path, validator: jsonschema.Draft7Validator
) -> None:
    doc = raycluster(path)
    assert doc["apiVersion"] == "ray.io/v1"
    assert _errors(validator, doc) == []


@pytest.mark.parametrize(
    "spoil, expect",
    [
        (lambda s: s["spec"].update(workerGroupSpec=[]), "workerGroupSpec"),
        (lambda s: s["spec"]["authOptions"].update(mode="tokens"), "tokens"),
        (lambda s: s["spec"]["workerGroupSpecs"][0].pop("groupName"), "groupName"),
        (
            lambda s: s["spec"]["workerGroupSpecs"][0]["template"]["spec"].update(
                securityContext={"fsGroup": "100"}
            ),
            "'100' is not of type 'integer'",
        ),
        (
            lambda s: s["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0].update(
                volumeMount=[]
            ),
            "volumeMount",
        ),
    ],
    ids=["unknown-field", "bad-enum", "missing-required", "wrong-type", "unknown-pod-field"],
)
def test_the_schema_check_catches_a_spoiled_manifest(
    spoil: Any, expect: str, validator: jsonschema.Draft7Validator
) -> None:
    doc = copy.deepcopy(raycluster(MANIFESTS[0]))
    spoil(doc)
    assert any(expect in e for e in _errors(validator, doc))


# -- the data volume -----------------------------------------------------------------------


def _claims_by_group(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, group in groups(path).items():
        volumes = group["template"]["spec"].get("volumes", [])
        out[name] = [
            v["persistentVolumeClaim"]["claimName"] for v in volumes if "persistentVolumeClaim" in v
        ]
    return out


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_each_claim_is_one_pod_s_and_that_pod_can_write_it(path: Path) -> None:
    claims = {c["metadata"]["name"]: c for c in of_kind(path, "PersistentVolumeClaim")}
    assert claims
    for claim in claims.values():
        assert claim["spec"]["accessModes"] == ["ReadWriteOncePod"]
        assert claim["spec"].get("storageClassName"), "the storage class is set (and settable)"
    owners = {n: c for n, c in _claims_by_group(path).items() if c}
    assert sorted(c for cs in owners.values() for c in cs) == sorted(claims), "one owner each"
    for name in owners:
        group = groups(path)[name]
        assert name != HEAD
        assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 1
        pod = group["template"]["spec"]
        # Ray's image runs as uid 1000 (gid 100): the volume must be group-writable for it.
        assert pod["securityContext"]["fsGroup"] == 100
        assert pod["securityContext"].get("runAsUser", 1000) == 1000
        mounts = {m["name"]: m["mountPath"] for m in container(group)["volumeMounts"]}
        data = [v["name"] for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert all(mounts[v].startswith("/data/memory") for v in data)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_store_shards_mount_where_the_store_looks(path: Path) -> None:
    head_env = env_of(groups(path)[HEAD])
    data_dir = head_env["MEMORY_DATA_DIR"]["value"]
    shards = int(head_env.get("MEMORY_STORE_SHARDS", {"value": "1"})["value"])
    mounts = set()
    for name, claims in _claims_by_group(path).items():
        if claims:
            mounts |= {m["mountPath"] for m in container(groups(path)[name])["volumeMounts"]}
    want = {data_dir} | {f"{data_dir}/.shard-{i}" for i in range(1, shards)}
    assert mounts == want


# -- the gateway ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_gateway_listens_on_the_pod_and_a_service_exposes_it(path: Path) -> None:
    from grpc_gateway.spec import DEFAULT_PORT, ENV_PREFIX
    from shared.client.bearer import is_loopback

    head_env = env_of(groups(path)[HEAD])  # the bootstrap runs there: the actors' settings
    host = head_env[ENV_PREFIX + "HOST"]["value"]
    assert not is_loopback(host)
    assert head_env[ENV_PREFIX + "TOKEN"]["valueFrom"]["secretKeyRef"]["key"]  # never open
    assert ENV_PREFIX + "PORT" not in head_env and DEFAULT_PORT == GATEWAY_PORT

    (service,) = of_kind(path, "Service")
    (port,) = service["spec"]["ports"]
    assert port["port"] == port["targetPort"] == GATEWAY_PORT
    selector = service["spec"]["selector"]
    assert selector["ray.io/cluster"] == raycluster(path)["metadata"]["name"]
    group = groups(path)[selector["ray.io/group"]]
    # the gateway is one actor: a Service over several pods would send calls to pods without it
    assert group["maxReplicas"] == 1
    assert GATEWAY_PORT in [p["containerPort"] for p in container(group).get("ports", [])]
    # the actor records itself in <data dir>/.state/gateway.json on its own pod: writable there
    data_dir = head_env["MEMORY_DATA_DIR"]["value"]
    mounts = {m["mountPath"]: m["name"] for m in container(group).get("volumeMounts", [])}
    volumes = {v["name"]: v for v in group["template"]["spec"]["volumes"]}
    assert "emptyDir" in volumes[mounts[data_dir]]
    assert env_of(group)["MEMORY_DATA_DIR"]["value"] == data_dir  # `memory` run in that pod


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_ray_auth_is_kuberay_s_and_nothing_is_wired_by_hand(path: Path) -> None:
    assert raycluster(path)["spec"]["authOptions"] == {"mode": "token"}
    for group in groups(path).values():
        assert not {"RAY_AUTH_MODE", "RAY_AUTH_TOKEN"} & set(env_of(group))


# -- placement -----------------------------------------------------------------------------


def _placement_demand(options: dict[str, Any]) -> dict[str, float]:
    """What Ray needs free on a node to place an actor with these options (ray/actor.py: with
    no resource named, 1 CPU to place it and none held; with any named, num_cpus or 1 CPU)."""
    resources = dict(options.get("resources") or {})
    if options.get("num_cpus") is None and not resources:
        return {"CPU": 1.0}
    cpus = options.get("num_cpus")
    return {"CPU": 1.0 if cpus is None else float(cpus), **resources}


def _fits(demand: dict[str, float], offer: dict[str, float]) -> bool:
    return all(offer.get(k, 0.0) >= v for k, v in demand.items() if v > 0)


@pytest.fixture
def actor_options(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``asks(env)``: every actor the bootstrap would start with ``env``, by name, with the
    Ray options its worker's ``start`` passes (nothing is started: ``start_detached`` and
    ``ray.get_actor`` are stand-ins)."""
    import ray

    import consolidate_worker.actor
    import extract_worker.actor
    import grpc_gateway.actor
    import store_worker.actor

    seen: dict[str, dict[str, Any]] = {}

    def capture(actor_class: type, *args: Any, name: str, **options: Any) -> object:
        seen[name] = options
        return object()

    for module in (store_worker.actor, extract_worker.actor, consolidate_worker.actor):
        monkeypatch.setattr(module, "start_detached", capture)
    monkeypatch.setattr(grpc_gateway.actor, "start_detached", capture)
    monkeypatch.setattr(ray, "get_actor", lambda *a, **k: object())

    def asks(env: dict[str, str]) -> dict[str, dict[str, Any]]:
        seen.clear()
        n = int(env.get("MEMORY_STORE_SHARDS", "1"))
        for i in range(n):  # the store's start() also writes the slot table: shards directly
            name = "memory-store" if i == 0 else f"memory-store-{i}"
            store_worker.actor.start_shard(env, i, n, name=name)
        extract_worker.actor.start(env)
        consolidate_worker.actor.start(env)
        grpc_gateway.actor.start(env)
        return dict(seen)

    yield asks


def _bootstrap_env(path: Path) -> dict[str, str]:
    env = {k: e.get("value", "from-a-secret") for k, e in env_of(groups(path)[HEAD]).items()}
    return {k: v for k, v in env.items() if k.startswith("MEMORY_")}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_actor_fits_only_the_group_meant_for_it(path: Path, actor_options: Any) -> None:
    asks = actor_options(_bootstrap_env(path))
    offered = {name: offers(group) for name, group in groups(path).items()}
    assert offered[HEAD] == {"CPU": 0.0}  # the head runs no work
    shards = int(_bootstrap_env(path).get("MEMORY_STORE_SHARDS", "1"))
    replicas = int(_bootstrap_env(path).get("MEMORY_EXTRACTOR_REPLICAS", "1"))
    assert len([a for a in asks if a.startswith("memory-store")]) == shards
    assert len([a for a in asks if a.startswith("memory-extractor")]) == replicas
    for actor, options in asks.items():
        demand = _placement_demand(options)
        where = sorted(g for g, offer in offered.items() if _fits(demand, offer))
        if actor.startswith("memory-store"):
            claims = _claims_by_group(path)
            assert len(where) == 1 and claims[where[0]], f"{actor} goes only where its data is"
        else:
            assert where == ["siblings"], f"{actor} fits {where}"
            assert options["num_cpus"] == 0  # holds no CPU of the siblings' pod either


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_store_s_slot_is_never_taken(path: Path, actor_options: Any) -> None:
    """Nothing but its store fits a store pod, even with the store gone (its node restarting):
    the store needs the pod's whole offer, and every other actor a resource it lacks."""
    asks = actor_options(_bootstrap_env(path))
    for name, claims in _claims_by_group(path).items():
        if not claims:
            continue
        offer = offers(groups(path)[name])
        fitting = [a for a, o in asks.items() if _fits(_placement_demand(o), offer)]
        assert len(fitting) == 1 and fitting[0].startswith("memory-store")
        (store,) = fitting
        assert _placement_demand(asks[store]) == offer  # it takes the pod's whole offer


def test_without_the_sibling_setting_placement_is_as_before(actor_options: Any) -> None:
    """One machine (``memory up``): no custom resource asked, the old options kept."""
    asks = actor_options({"MEMORY_DATA_DIR": "/tmp/x"})
    assert asks["memory-extractor"]["num_cpus"] == 0 and "resources" not in asks["memory-extractor"]
    assert asks["memory-grpc"]["num_cpus"] == 0 and "resources" not in asks["memory-grpc"]
    assert "num_cpus" not in asks["memory-consolidator"]
    assert "resources" not in asks["memory-consolidator"]
    assert asks["memory-store"].get("resources") is None


# -- the image and the commands ------------------------------------------------------------


def test_the_image_installs_every_package_deploy_included() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    # setuptools' find: folders with an __init__.py whose name matches an include pattern
    top = {
        d.name
        for d in ROOT.iterdir()
        if (d / "__init__.py").is_file() and any(fnmatch.fnmatch(d.name, p) for p in include)
    }
    assert "deploy" in top
    dockerfile = (DEPLOY / "Dockerfile").read_text("utf-8")
    copied = set(re.findall(r"^COPY\s+(?:--\S+\s+)*(\w+)\s", dockerfile, re.M))
    assert top <= copied, f"not copied into the image: {sorted(top - copied)}"
    assert re.search(r"^RUN pip install .*\[llm\]", dockerfile, re.M)
    assert "docker build -f deploy/Dockerfile" in dockerfile  # the documented build command


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_head_bootstraps_on_every_start_and_nothing_uploads_code(path: Path) -> None:
    cluster = raycluster(path)
    assert cluster["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    for name, group in groups(path).items():
        script = " ".join(container(group)["args"])
        assert script.rstrip().endswith("exec $KUBERAY_GEN_RAY_START_CMD"), name
    assert head_bootstrap_command(path)[:3] == ["python", "-m", "deploy.bootstrap"]
    for doc in [path, *DOCS]:
        assert "--working-dir" not in doc.read_text("utf-8"), doc.name


def test_the_submit_steps_are_the_same_everywhere() -> None:
    blocks = {p.name: submit_block(p.read_text("utf-8")) for p in [*MANIFESTS, *DOCS]}
    first = blocks[MANIFESTS[0].name]
    assert first[-1] == "ray job submit -- python -m deploy.bootstrap"
    assert all(b == first for b in blocks.values()), blocks


def test_every_document_parses() -> None:
    for path in MANIFESTS:
        kinds = sorted(d["kind"] for d in documents(path))
        assert kinds.count("RayCluster") == 1 and "Service" in kinds
