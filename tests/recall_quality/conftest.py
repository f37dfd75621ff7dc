"""What the recall-quality tests share: loading this folder's eval modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def load_by_path(name: str, filename: str) -> ModuleType:
    """This folder's ``filename`` as module ``name``, loaded once: tests/ has no __init__.py
    (pytest importlib mode), so the eval modules are loaded by path."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module
