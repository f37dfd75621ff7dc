"""Generate the Python stubs of every proto here: ``python -m shared.proto.build``.

``memory.v1`` (the memory provider protocol) and ``memory.store.v1`` (the rest of the store
API, for the CLI). The stubs are committed (so installing the package needs no protoc) and
``tests/grpc_gateway/test_stubs.py`` regenerates them into a temporary folder and compares, so a
proto change without regenerated stubs fails the suite. Needs the dev extra (grpcio-tools).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO = Path("shared/proto/memory/v1/memory.proto")
STORE_PROTO = Path("shared/proto/memory/store/v1/store.proto")
PROTOS = (PROTO, STORE_PROTO)
SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
OUTPUTS = tuple("memory" + s for s in SUFFIXES)  # memory.v1's, as before


SERVICE_STUBS = frozenset({PROTO})
"""Protos whose gRPC service stubs are generated. memory.store.v1's service has one method,
``Call``, served and called through grpcio's generic handlers on the message classes alone
(``grpc_gateway.store_service``, ``shared.client.grpc``): a generated stub would be unused."""


def outputs(proto: Path) -> tuple[str, ...]:
    """The stub file names protoc writes beside ``proto``."""
    suffixes = SUFFIXES if proto in SERVICE_STUBS else SUFFIXES[:2]
    return tuple(proto.stem + s for s in suffixes)


def generate(out_dir: Path) -> list[Path]:
    """Run protoc over every proto, writing the stubs under ``out_dir`` (mirroring the tree)."""
    import grpc_tools
    from grpc_tools import protoc  # dev-only dependency: imported here, never at import time

    include = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto
    out_dir.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    for proto in PROTOS:
        args = [
            "grpc_tools.protoc",
            f"-I{ROOT}",
            f"-I{include}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            *([f"--grpc_python_out={out_dir}"] if proto in SERVICE_STUBS else []),
            str(ROOT / proto),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {proto}")
        made += [out_dir / proto.parent / name for name in outputs(proto)]
    for path in made:
        _pin_grpc_floor(path)
    return made


GRPC_FLOOR = "1.85.1"
"""The oldest grpcio the project supports (pyproject): the gRPC stubs check the installed
grpcio against the version recorded in them, which protoc sets to its own (a newer patch
release of grpcio-tools would otherwise change the stubs and demand that patch at run time)."""


def _pin_grpc_floor(path: Path) -> None:
    if path.name.endswith("_pb2_grpc.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(
            r"^GRPC_GENERATED_VERSION = '[^']*'$",
            f"GRPC_GENERATED_VERSION = '{GRPC_FLOOR}'",
            text,
            flags=re.M,
        )
        path.write_text(text, encoding="utf-8")


def main() -> int:
    for path in generate(ROOT):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
