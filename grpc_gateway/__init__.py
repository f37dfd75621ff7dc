"""``memory-grpc``: the memory.v1 gRPC gateway (docs/ARCHITECTURE.md#the-gateway).

It holds no data: every RPC is one call on the store's public API
(``shared.contract.api.StoreAPI``), served by a plain ``MemoryStore`` in tests and embedded mode,
or by the ``memory-store`` actor through ``shared.client.ray.StoreClient`` in production
(``actor.py``). It can be stopped or scaled freely.
"""
