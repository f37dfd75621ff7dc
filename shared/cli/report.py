"""``memory status`` and ``memory metrics``: what runs, what it holds, how it performs.

Through a running gateway both ask it (``gateway.status``, ``gateway.metrics`` on
memory.store.v1's ``Call``: the gateway runs in the cluster, with Ray), so this process never
imports Ray (~1 s, and ~2 s to join the cluster); with no gateway recorded, or one that cannot
answer them (``memory grpc --data-dir`` has no cluster), they join the cluster over Ray.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from shared import format as fmt
from shared.cli import output as show
from shared.client import console_file, gateway_file
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError

if TYPE_CHECKING:
    from shared.cli import Ctx


def status(ctx: Ctx) -> Any:
    from shared import cli as app  # its discover(), as tests replace it
    from shared.client import lifecycle  # urllib and /proc reads: only when asked
    from shared.contract.principal import ADMIN, WHOAMI

    ctx.args.render = show.status
    if ctx.embedded:  # this process holds the data dir: it is the admin
        return {
            "mode": "embedded",
            "data_dir": ctx.args.data_dir,
            "principal": ADMIN.to_dict(),
            "banks": bank_list(ctx),
        }
    found = gateway_file.discover()
    # which principal this process is at the gateway (MEMORY_TOKEN, else the recorded token);
    # over Ray, with no gateway, the admin (joining the cluster is the admin's)
    me = gateway_call(ctx, found, WHOAMI, {}) or ADMIN.to_dict()
    if not me.get("admin") and found is not None:  # a scoped token: the cluster is not its
        return {
            "mode": "scoped",
            "gateway": found[1].address,
            "principal": me,
            "banks": bank_list(ctx),
        }
    # what status prints, it checked: each worker answers ping, the dashboard answers HTTP
    actors = {s.name: s.actor_name for s in app.discover()}
    cluster = gateway_call(ctx, found, lifecycle.STATUS_CALL, {"workers": actors})
    if cluster is None:  # over Ray, from this process
        cluster = lifecycle.cluster_report(actors)
    url, workers = cluster["dashboard_url"], cluster["workers"]
    banks = bank_list(ctx) if workers.get("store") else []
    gateway = found[1] if found is not None else None
    data_dir = found[0] if found is not None else None
    if gateway is None and workers.get("store"):
        # run from another folder than `up`'s: the gateway is recorded in the data dir the
        # store serves (it said "not running" while memory-grpc was up)
        data_dir = ctx.store.describe()["data_dir"]
        gateway = gateway_file.read(data_dir)
    console = (
        console_file.read(data_dir) if data_dir is not None and workers.get("console") else None
    )
    return {
        "mode": "ray",
        "gateway": gateway.address if gateway else None,
        "principal": me,
        "console": console.url if console else None,
        "dashboard_url": url,
        "dashboard_answers": lifecycle.dashboard_answers(url),
        "workers": workers,
        "shards": cluster["shards"],
        "banks": banks,
    }


def metrics(ctx: Ctx) -> Any:
    from shared.cli import prometheus

    urls = ctx.args.url
    if urls:
        text = prometheus.scrape(urls)
    elif ctx.embedded:
        raise InvalidArgumentError("metrics come from the running cluster: drop --data-dir")
    else:
        from shared.client import lifecycle

        got = gateway_call(ctx, gateway_file.discover(), lifecycle.METRICS_CALL, {})
        if got is not None:
            text = str(got["text"])
        else:  # over Ray, from this process
            from shared.client.ray import join_cluster

            join_cluster()
            text = prometheus.scrape(prometheus.endpoints())
    ctx.args.render = prometheus.render
    return prometheus.summary(prometheus.parse(text))


def gateway_call(
    ctx: Ctx, found: tuple[Any, gateway_file.GatewayInfo] | None, name: str, args: dict[str, Any]
) -> Any | None:
    """The answer of the recorded gateway's own call ``name``; ``None`` when no gateway is
    recorded, it does not answer, or it does not serve that call (then: over Ray)."""
    if found is None:
        return None
    import grpc

    from shared.client import wire
    from shared.client.bearer import client_token
    from shared.client.grpc import MAX_ANSWER_BYTES, error_from
    from shared.proto.memory.store.v1 import store_pb2 as spb

    gateway = found[1]
    token = client_token(os.environ, gateway.token)  # MEMORY_TOKEN: a scoped principal
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    options = [("grpc.max_receive_message_length", MAX_ANSWER_BYTES)]
    with grpc.insecure_channel(gateway.address, options=options) as channel:
        call = channel.unary_unary(
            f"/{wire.SERVICE}/Call",
            request_serializer=spb.StoreCall.SerializeToString,
            response_deserializer=spb.StoreResult.FromString,
        )
        request = spb.StoreCall(op=name, args_json=json.dumps(args))
        try:
            reply = call(request, timeout=ctx.args.timeout, metadata=metadata)
        except grpc.RpcError as e:
            err = error_from(e, gateway.address)
            if isinstance(err, SourceUnavailableError | InvalidArgumentError):
                return None  # gone, or a gateway without a cluster: ask Ray
            raise err from None
    return json.loads(reply.result_json)


def bank_list(ctx: Ctx) -> list[dict[str, Any]]:
    return [fmt.jsonable(b) for b in ctx.store.bank_list().banks]
