"""``memory metrics``: the workers' current metrics, read where Ray exports them.

Each actor records ``ray.util.metrics`` (``store_worker.actor``, ``extract_worker.actor``,
``consolidate_worker.actor``); Ray exports them, prefixed ``ray_``, in the Prometheus text
format on every node's metrics export port (``ray.nodes()[i]["MetricsExportPort"]``), the port
``deploy/prometheus.yml`` scrapes. This module reads that text, keeps the ``ray_memory_*``
families, folds away Ray's own labels (worker id, session, node, ...) by summing counters and
histograms across them, and prints one line per family and label set::

    store
      recall_latency_ms   bank=main  12 observed, mean 0.8 ms, p50 <= 1, p95 <= 2
      writes              method=save  10
      live_memories       bank=main  42
      outbox_depth        state=queued  0

Ray exports a value some seconds after the actor records it (its report interval), so a
metric recorded a moment ago may not be there yet.
"""

from __future__ import annotations

import math
import re
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from shared.contract.errors import SourceUnavailableError

PREFIX = "ray_memory_"
# name{labels} value [timestamp]; label values are quoted with \" and \\ escapes
SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
COMPONENTS = ("store", "extractor", "consolidator")


def ours(label: str) -> bool:
    """A label the actor set (bank, method, outcome, ...), not one Ray adds: Ray's are
    capitalised (``WorkerId``, ``SessionName``) or OpenTelemetry's (``otel_scope_name``)."""
    return label[:1].islower() and not label.startswith("otel_")


@dataclass
class Family:
    """One metric family: its type and, per label set of ours, the folded values."""

    name: str  # without the ray_memory_ prefix: store_writes
    kind: str = "untyped"
    help: str = ""
    values: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)
    # histograms: per label set, the bucket counts by upper bound, the sum and the count
    buckets: dict[tuple[tuple[str, str], ...], dict[float, float]] = field(default_factory=dict)
    sums: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)
    counts: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)


def parse(text: str) -> dict[str, Family]:
    """The ``ray_memory_*`` families of a Prometheus text exposition."""
    families: dict[str, Family] = {}
    for line in text.splitlines():
        if line.startswith(("# TYPE ", "# HELP ")):
            _, what, name, *rest = line.split(" ", 3)
            if name.startswith(PREFIX):
                fam = families.setdefault(_name(name), Family(_name(name)))
                if what == "TYPE":
                    fam.kind = rest[0].strip() if rest else "untyped"
                else:
                    fam.help = rest[0] if rest else ""
            continue
        match = SAMPLE.match(line.strip())
        if match is not None and match.group(1).startswith(PREFIX):
            _add(families, match.group(1), match.group(2) or "", match.group(3))
    return families


def _name(exported: str) -> str:
    """``ray_memory_store_writes_total`` → ``store_writes`` (OpenTelemetry adds ``_total``)."""
    return exported[len(PREFIX) :].removesuffix("_total")


def _add(families: dict[str, Family], name: str, raw_labels: str, raw_value: str) -> None:
    try:
        value = float(raw_value)
    except ValueError:
        return
    labels = dict(LABEL.findall(raw_labels))
    key = tuple(sorted((k, v) for k, v in labels.items() if ours(k) and k != "le"))
    short = name[len(PREFIX) :]
    for suffix in ("_bucket", "_sum", "_count"):
        base = short.removesuffix(suffix)
        if base != short and base in families and families[base].kind == "histogram":
            _add_histogram(families[base], suffix, key, labels.get("le", "+Inf"), value)
            return
    fam = families.setdefault(_name(name), Family(_name(name)))
    if fam.kind == "gauge":
        fam.values[key] = value  # one actor owns a gauge; a restarted one's series is the last
    else:  # counters (and untyped) add up across Ray's per-worker series
        fam.values[key] = fam.values.get(key, 0.0) + value


def _add_histogram(
    fam: Family, suffix: str, key: tuple[tuple[str, str], ...], le: str, value: float
) -> None:
    if suffix == "_bucket":
        try:
            bound = math.inf if le == "+Inf" else float(le)
        except ValueError:
            return  # not a bucket we can place
        per = fam.buckets.setdefault(key, {})
        per[bound] = per.get(bound, 0.0) + value
    elif suffix == "_sum":
        fam.sums[key] = fam.sums.get(key, 0.0) + value
    else:
        fam.counts[key] = fam.counts.get(key, 0.0) + value


def quantile(buckets: dict[float, float], q: float) -> float | None:
    """The smallest bucket upper bound holding the q-quantile (cumulative buckets)."""
    if not buckets:
        return None
    total = buckets.get(math.inf, max(buckets.values()))
    if total <= 0:
        return None
    for bound in sorted(buckets):
        if buckets[bound] >= q * total:
            return bound
    return math.inf


def summary(families: dict[str, Family]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{component: {metric: [{labels..., value or count/mean/p50/p95}, ...]}}``."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name in sorted(families, key=_order):
        fam = families[name]
        component, _, metric = name.partition("_")
        rows: list[dict[str, Any]] = []
        if fam.kind == "histogram":
            for key in sorted(fam.counts):
                count = fam.counts[key]
                mean = fam.sums.get(key, 0.0) / count if count else 0.0
                per = fam.buckets.get(key, {})
                p50, p95 = quantile(per, 0.5), quantile(per, 0.95)
                rows.append(
                    {
                        "labels": dict(key),
                        "count": count,
                        "mean": mean,
                        # a bucket's upper bound; "+Inf": above the largest one
                        "p50": "+Inf" if p50 == math.inf else p50,
                        "p95": "+Inf" if p95 == math.inf else p95,
                    }
                )
        else:
            rows = [{"labels": dict(key), "value": fam.values[key]} for key in sorted(fam.values)]
        if rows:
            out.setdefault(component, {})[metric] = rows
    return out


def _order(name: str) -> tuple[int, str]:
    component = name.partition("_")[0]
    return (COMPONENTS.index(component) if component in COMPONENTS else len(COMPONENTS), name)


def render(shown: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    if not shown:
        return (
            "no memory metrics exported yet (Ray exports them some seconds after the first "
            "call; is `memory up` running?)"
        )
    lines: list[str] = []
    for component, metrics in shown.items():
        lines.append(component)
        width = max(len(m) for m in metrics) + 2
        for metric, rows in metrics.items():
            for row in rows:
                labels = " ".join(f"{k}={v}" for k, v in row["labels"].items())
                lines.append(f"  {metric:<{width}}{labels + '  ' if labels else ''}{_value(row)}")
    return "\n".join(lines)


def _value(row: dict[str, Any]) -> str:
    if "value" in row:
        return _number(row["value"])
    bounds = " ".join(f"{q} <= {_number(row[q])}" for q in ("p50", "p95") if row[q] is not None)
    return f"{_number(row['count'])} observed, mean {_number(row['mean'])}  {bounds}".rstrip()


def _number(x: float | str) -> str:
    if isinstance(x, str):
        return x
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


# -- where Ray exports them --------------------------------------------------------------------


def endpoints() -> list[str]:
    """Each live node's metrics URL (needs the connected cluster)."""
    import ray

    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return [
        f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics"
        for n in nodes
        if n.get("Alive") and n.get("MetricsExportPort")
    ]


def scrape(urls: Iterable[str], timeout: float = 5.0) -> str:
    texts = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                texts.append(answer.read().decode("utf-8", errors="replace"))
        except (OSError, ValueError) as e:
            raise SourceUnavailableError(f"cannot read Ray's metrics at {url}: {e}") from e
    return "\n".join(texts)
