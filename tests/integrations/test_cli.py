"""The integrations' verbs reach ``memory`` through the ``agent_memory.commands`` entry point,
with help for every option, and the MCP token never comes from a flag's value."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from integrations.cli import read_token
from shared.cli import build_parser
from shared.client.workers import discover_commands
from shared.contract import errors


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.mark.usefixtures("memory_env")
def test_mcp_and_hook_are_memory_verbs_with_help() -> None:
    assert "integrations" in [c.name for c in discover_commands()]
    verbs = _subparsers(build_parser())
    for name in ("mcp", "hook"):
        parser = verbs[name]
        assert parser.description
        for action in parser._actions:
            assert action.help, f"`memory {name}` {action.dest} has no help"
    options = {o for a in verbs["mcp"]._actions for o in a.option_strings}
    assert "--token-file" in options and "--token" not in options


def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  abc123\n")
    assert read_token(str(path), {"MEMORY_MCP_TOKEN": "env"}) == "abc123"
    assert read_token(None, {"MEMORY_MCP_TOKEN": "mcp", "MEMORY_GRPC_TOKEN": "grpc"}) == "mcp"
    assert read_token(None, {"MEMORY_GRPC_TOKEN": "grpc"}) == "grpc"
    assert read_token(None, {}) is None
    path.write_text("\n")
    with pytest.raises(errors.InvalidArgumentError):
        read_token(str(path), {})
    with pytest.raises(errors.InvalidArgumentError):
        read_token(str(tmp_path / "missing"), {})
