"""``memory metrics``: Ray's Prometheus text read, folded to our labels, and printed.

The exposition below is the shape Ray 2.60 exports on a node's metrics port (copied from a
real scrape, two label sets shortened): Ray's labels (``WorkerId``, ``SessionName``, ...)
beside ours (``bank``, ``method``, ...), histograms as cumulative buckets.
"""

from __future__ import annotations

import http.server
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.cli import prometheus, run

RAY = 'Component="core_worker",NodeAddress="192.0.2.2",SessionName="session_x",Version="2.60.0"'
OTEL = 'otel_scope_name="ray._private.telemetry",otel_scope_schema_url="",otel_scope_version=""'
W1, W2 = 'WorkerId="aaa"', 'WorkerId="bbb"'  # the store actor before and after a restart


def _lat(le: str, n: int) -> str:
    return f'ray_memory_store_recall_latency_ms_bucket{{{RAY},{W1},bank="main",le="{le}",{OTEL}}} {n}.0'  # noqa: E501


EXPOSITION = "\n".join(
    [
        "# HELP process_resident_memory_bytes Resident memory size in bytes.",
        "# TYPE process_resident_memory_bytes gauge",
        "process_resident_memory_bytes 1.27e+08",
        "# HELP ray_memory_store_recall_latency_ms Recall latency inside the store actor.",
        "# TYPE ray_memory_store_recall_latency_ms histogram",
        _lat("0.5", 0),
        _lat("1.0", 6),
        _lat("2.0", 9),
        _lat("5.0", 10),
        _lat("+Inf", 10),
        f'ray_memory_store_recall_latency_ms_count{{{RAY},{W1},bank="main",{OTEL}}} 10.0',
        f'ray_memory_store_recall_latency_ms_sum{{{RAY},{W1},bank="main",{OTEL}}} 12.5',
        "# HELP ray_memory_store_writes_total Mutating calls served, by method.",
        "# TYPE ray_memory_store_writes_total counter",
        f'ray_memory_store_writes_total{{{RAY},{W1},method="save",{OTEL}}} 3.0',
        f'ray_memory_store_writes_total{{{RAY},{W2},method="save",{OTEL}}} 2.0',
        f'ray_memory_store_writes_total{{{RAY},{W2},method="delete",{OTEL}}} 1.0',
        "# HELP ray_memory_store_live_memories Live canonical memories per bank.",
        "# TYPE ray_memory_store_live_memories gauge",
        f'ray_memory_store_live_memories{{{RAY},{W2},bank="main",{OTEL}}} 41.0',
        "# TYPE ray_memory_store_outbox_depth gauge",
        f'ray_memory_store_outbox_depth{{{RAY},{W2},state="queued",{OTEL}}} 2.0',
        "# TYPE ray_memory_extractor_jobs_total counter",
        f'ray_memory_extractor_jobs_total{{{RAY},{W1},outcome="done",{OTEL}}} 7.0',
        "# TYPE ray_memory_consolidator_passes_total counter",
        f'ray_memory_consolidator_passes_total{{{RAY},{W1},outcome="ok",{OTEL}}} 1.0',
        "",
    ]
)


def test_parse_keeps_our_families_and_folds_rays_labels() -> None:
    families = prometheus.parse(EXPOSITION)
    assert set(families) == {
        "store_recall_latency_ms",
        "store_writes",
        "store_live_memories",
        "store_outbox_depth",
        "extractor_jobs",
        "consolidator_passes",
    }
    # a counter sums across a restarted actor's two worker series; only our label is kept
    assert families["store_writes"].values == {
        (("method", "save"),): 5.0,
        (("method", "delete"),): 1.0,
    }
    latency = families["store_recall_latency_ms"]
    assert latency.counts == {(("bank", "main"),): 10.0}
    assert latency.buckets[(("bank", "main"),)][1.0] == 6.0


def test_summary_gives_count_mean_and_bucket_quantiles() -> None:
    shown = prometheus.summary(prometheus.parse(EXPOSITION))
    assert list(shown) == ["store", "extractor", "consolidator"]
    (row,) = shown["store"]["recall_latency_ms"]
    assert row == {"labels": {"bank": "main"}, "count": 10.0, "mean": 1.25, "p50": 1.0, "p95": 5.0}
    assert shown["store"]["live_memories"] == [{"labels": {"bank": "main"}, "value": 41.0}]
    assert shown["extractor"]["jobs"] == [{"labels": {"outcome": "done"}, "value": 7.0}]


def test_a_quantile_above_every_bound_is_plus_inf() -> None:
    assert prometheus.quantile({1.0: 0.0, float("inf"): 4.0}, 0.5) == float("inf")
    assert prometheus.quantile({}, 0.5) is None


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[str]:
    """A plain HTTP server answering ``/metrics`` with the exposition above."""
    (tmp_path / "metrics").write_text(EXPOSITION, "utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_memory_metrics_prints_each_component_and_json_with_json(endpoint: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run(["metrics", "--url", endpoint], out=out, err=err) == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == "store"
    assert "  recall_latency_ms  bank=main  10 observed, mean 1.25  p50 <= 1 p95 <= 5" in lines
    assert "  writes             method=save  5" in lines
    assert "  outbox_depth       state=queued  2" in lines
    assert "extractor" in lines and "  jobs  outcome=done  7" in lines
    out = io.StringIO()
    assert run(["--json", "metrics", "--url", endpoint], out=out, err=err) == 0
    assert json.loads(out.getvalue())["consolidator"]["passes"][0]["value"] == 1.0


def test_an_unreachable_endpoint_is_source_unavailable(endpoint: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    missing = endpoint.replace("/metrics", "/nothing-here")
    assert run(["metrics", "--url", missing], out=out, err=err) == 2
    assert err.getvalue().startswith("error: source_unavailable: cannot read Ray's metrics at")


# -- deploy/: the Grafana dashboard and the scrape config ------------------------------------

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _declared(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Every metric the actors declare, as Ray exports its name (``ray_`` prefix)."""
    from ray.util import metrics as ray_metrics

    from consolidate_worker.actor import _Metrics as ConsolidatorMetrics
    from extract_worker.actor import _Metrics as ExtractorMetrics
    from store_worker.actor import _Metrics as StoreMetrics

    names: set[str] = set()

    class Declared:
        def __init__(self, name: str, *args: object, **kwargs: object) -> None:
            names.add(f"ray_{name}")

    for kind in ("Counter", "Histogram", "Gauge"):
        monkeypatch.setattr(ray_metrics, kind, Declared)
    StoreMetrics(), ExtractorMetrics(), ConsolidatorMetrics()
    return names


def test_the_grafana_dashboard_charts_every_declared_metric_and_no_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import re

    dashboard = json.loads((DEPLOY / "grafana-memory.json").read_text("utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {
        re.sub(r"_(bucket|sum|count|total)$", "", name)
        for expr in exprs
        for name in re.findall(r"ray_memory_\w+", expr)
    }
    assert used == _declared(monkeypatch)
    assert all(p["datasource"]["uid"] == "${datasource}" for p in dashboard["panels"])


def test_the_scrape_config_reads_rays_service_discovery_file() -> None:
    import yaml

    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text("utf-8"))
    (job,) = config["scrape_configs"]
    files = job["file_sd_configs"][0]["files"]
    assert files == ["/tmp/ray/prom_metrics_service_discovery.json"]
