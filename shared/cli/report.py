"""``memory status`` and ``memory metrics``: what runs, what it holds, how it performs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared import format as fmt
from shared.cli import output as show
from shared.client import gateway_file
from shared.contract.errors import InvalidArgumentError

if TYPE_CHECKING:
    from shared.cli import Ctx


def status(ctx: Ctx) -> Any:
    from shared import cli as app  # its discover(), as tests replace it
    from shared.client import lifecycle  # urllib and /proc reads: only when asked

    ctx.args.render = show.status
    if ctx.embedded:
        return {"mode": "embedded", "data_dir": ctx.args.data_dir, "banks": bank_list(ctx)}
    from shared.client.ray import join_cluster

    url = join_cluster()["dashboard_url"]
    # what status prints, it checked: each worker answers ping, the dashboard answers HTTP
    from shared.client.workers import NAMESPACE

    workers = {s.name: lifecycle.worker_answers(s.actor_name, NAMESPACE) for s in app.discover()}
    banks = bank_list(ctx) if workers.get("store") else []
    found = gateway_file.discover()
    gateway = found[1] if found is not None else None
    if gateway is None and workers.get("store"):
        # run from another folder than `up`'s: the gateway is recorded in the data dir the
        # store serves (it said "not running" while memory-grpc was up)
        gateway = gateway_file.read(ctx.store.describe()["data_dir"])
    return {
        "mode": "ray",
        "gateway": gateway.address if gateway else None,
        "dashboard_url": url,
        "dashboard_answers": lifecycle.dashboard_answers(url),
        "workers": workers,
        "banks": banks,
    }


def metrics(ctx: Ctx) -> Any:
    from shared.cli import prometheus

    urls = ctx.args.url
    if not urls:
        if ctx.embedded:
            raise InvalidArgumentError("metrics come from the running cluster: drop --data-dir")
        from shared.client.ray import join_cluster

        join_cluster()
        urls = prometheus.endpoints()
    ctx.args.render = prometheus.render
    return prometheus.summary(prometheus.parse(prometheus.scrape(urls)))


def bank_list(ctx: Ctx) -> list[dict[str, Any]]:
    return [fmt.jsonable(b) for b in ctx.store.bank_list().banks]
