"""``memory down`` and ``memory stop``: stop the workers, and the cluster ``up`` started."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from shared.client import console_file, gateway_file
from shared.contract.errors import InvalidArgumentError, MemoryServiceError, SourceUnavailableError

if TYPE_CHECKING:
    from shared.cli import Ctx


def say(ctx: Ctx, line: str) -> None:
    stream = sys.stderr if ctx.args.json else ctx.out
    stream.write(line + "\n")
    stream.flush()


def cluster_only(ctx: Ctx, verb: str) -> None:
    """``down`` and ``stop`` act on the running cluster; the embedded mode (``--data-dir``, or
    ``MEMORY_EMBEDDED=1``) has none, and must not stop one serving another data dir."""
    if ctx.embedded:
        raise InvalidArgumentError(
            f"`{verb}` stops the running cluster; the embedded mode (--data-dir, "
            "MEMORY_EMBEDDED) has nothing to stop: drop it"
        )


def down(ctx: Ctx) -> int:
    from shared.client import lifecycle  # urllib and /proc reads: only when asked

    cluster_only(ctx, "down")
    import ray

    from shared import cli as app  # its discover(), as tests replace it
    from shared.cli import cluster
    from shared.client.ray import join_cluster

    try:
        url = join_cluster()["dashboard_url"]
    except SourceUnavailableError:
        return _down_unreachable(ctx)
    gateway = _recorded_gateway(ctx)  # asked before the store stops
    for spec in reversed(app.discover()):
        if cluster.stop_worker(spec):
            say(ctx, f"stopped {spec.name}")
    marker = lifecycle.Marker.read(lifecycle.session_dir())
    if ctx.args.keep_cluster or marker is None:
        why = "" if ctx.args.keep_cluster else " (not started by `memory up`)"
        _forget_gateway(gateway)
        say(ctx, f"ray cluster left running{why}")
        return 0
    workers = lifecycle.ray_worker_pids(url)  # Ray's own list, while it still answers
    ray.shutdown()
    count = lifecycle.stop_marked(marker, workers)
    lifecycle.forget_address(marker.address)
    _forget_gateway(gateway)
    say(ctx, f"ray cluster stopped ({count} processes)")
    return 0


def _recorded_gateway(ctx: Ctx) -> tuple[str, gateway_file.GatewayInfo | None] | None:
    """The running store's data dir and the gateway recorded there, if any."""
    from shared.client.ray import StoreClient

    try:
        data_dir = str(StoreClient(timeout=ctx.args.timeout).describe()["data_dir"])
    except MemoryServiceError:  # no store running: nothing recorded by this cluster to find
        return None
    return data_dir, gateway_file.read(data_dir)


def _forget_gateway(gateway: tuple[str, gateway_file.GatewayInfo | None] | None) -> None:
    """``down`` stopped the gateway and the console with ``ray.kill``, which skips their own
    clean-up: remove their ``gateway.json`` and ``console.json`` (a stale one could name a
    reused pid) once their processes are gone, and the user's pointer to that data dir."""
    if gateway is None:
        return
    data_dir, info = gateway
    console_file.forget(data_dir)  # its record holds the console's token
    if info is not None:
        gateway_file.forget(data_dir, info)
    gateway_file.unpoint(data_dir)


def _down_unreachable(ctx: Ctx) -> int:
    """No cluster answers: stop a half-dead one `up` started (its GCS gone), found by the
    marker in Ray's latest session folder; anything else is not ours to stop."""
    from shared.client import lifecycle  # urllib and /proc reads: only when asked

    marker = lifecycle.Marker.read(lifecycle.latest_session(lifecycle.address_file().parent))
    alive = lifecycle.session_pids(marker.session_id) if marker else []
    if marker is None or not alive or ctx.args.keep_cluster:
        say(ctx, "nothing to stop: no memory cluster is running")
        return 0
    count = lifecycle.stop_marked(marker)
    lifecycle.forget_address(marker.address)
    say(ctx, f"ray cluster stopped ({count} processes; it no longer answered)")
    return 0


def stop(ctx: Ctx) -> int:
    cluster_only(ctx, "stop")
    from shared.cli import cluster
    from shared.client.ray import join_cluster

    spec = cluster.select_workers([ctx.args.worker])[0]
    join_cluster()
    stopped = cluster.stop_worker(spec)
    say(
        ctx,
        f"stopped {spec.name} ({', '.join(stopped)})"
        if stopped
        else f"{spec.name} was not running",
    )
    return 0
