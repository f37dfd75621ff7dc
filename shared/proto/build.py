"""Generate the memory.v1 Python stubs: ``python -m shared.proto.build``.

The stubs are committed (so installing the package needs no protoc) and
``tests/grpc_gateway/test_stubs.py`` regenerates them into a temporary folder and compares, so a
proto change without regenerated stubs fails the suite. Needs the dev extra (grpcio-tools).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO = Path("shared/proto/memory/v1/memory.proto")
OUTPUTS = ("memory_pb2.py", "memory_pb2.pyi", "memory_pb2_grpc.py")


def generate(out_dir: Path) -> list[Path]:
    """Run protoc over the proto, writing the stubs under ``out_dir`` (mirroring the tree)."""
    import grpc_tools
    from grpc_tools import protoc  # dev-only dependency: imported here, never at import time

    include = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(ROOT / PROTO),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {PROTO}")
    return [out_dir / PROTO.parent / name for name in OUTPUTS]


def main() -> int:
    for path in generate(ROOT):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
