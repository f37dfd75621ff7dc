"""Standard gRPC citizenship (what probes and grpcurl expect of any gRPC server):
``grpc.health.v1.Health`` and server reflection.

Both come from grpcio's own packages (``grpcio-health-checking``, ``grpcio-reflection``).
Health answers SERVING only while the store answers: each ``Check`` (at most once per
``PROBE_EVERY_S``, so a probe storm costs the store one call) pings the store and sets every
service's status, the server's own ``""`` included, to SERVING or NOT_SERVING. A ``Watch``
starts from a fresh probe and sees each later change as a Check makes it. Kubernetes gRPC
probes, ``grpc_health_probe`` and load balancers call Check.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

log = logging.getLogger(__name__)

PROBE_EVERY_S = 1.0
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


class StoreHealth(health.HealthServicer):  # type: ignore[misc]
    """``grpc.health.v1.Health`` whose status follows the store: ``probe()`` raising (or not
    answering) is NOT_SERVING."""

    def __init__(self, probe: Callable[[], object], services: Sequence[str]) -> None:
        super().__init__()
        self._probe = probe
        self._services = ("", *services)
        for name in self._services:  # nothing is SERVING before the store has answered
            self.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        self._checked_at = float("-inf")
        self._probe_lock = threading.Lock()

    def refresh(self) -> bool:
        """Ping the store now and publish the outcome; returns whether it answered."""
        try:
            self._probe()
            serving = True
        except Exception as e:  # any failure to answer is "not serving", never an RPC error
            log.info("store health probe failed: %s", e)
            serving = False
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else (health_pb2.HealthCheckResponse.NOT_SERVING)
        )
        for name in self._services:
            self.set(name, status)
        return serving

    def _fresh(self) -> None:
        with self._probe_lock:
            if time.monotonic() - self._checked_at >= PROBE_EVERY_S:
                self.refresh()
                self._checked_at = time.monotonic()

    def Check(self, request: Any, context: Any) -> Any:
        self._fresh()
        return super().Check(request, context)

    def Watch(self, request: Any, context: Any, send_response_callback: Any = None) -> Any:
        self._fresh()  # the first answer is the store's state now, not a default
        return super().Watch(request, context, send_response_callback)


def add_citizenship(
    server: grpc.Server, probe: Callable[[], object], services: Sequence[str]
) -> StoreHealth:
    """Register health (over ``services``) and reflection (listing them, health and itself)."""
    checker = StoreHealth(probe, services)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    names = (*services, HEALTH_SERVICE, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    return checker
