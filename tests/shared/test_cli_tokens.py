"""``memory token`` and ``memory status`` against a real gateway, the CLI in its own process:
the admin (the recorded token) makes a scoped token, printed once; with ``MEMORY_TOKEN`` the
CLI is that principal: ``status`` names it, and what it may not do is refused, exit code 2."""

from __future__ import annotations

from pathlib import Path

from store_worker.core import MemoryStore
from tests.shared.test_cli_gateway import Cli, gateway  # noqa: F401  (the fixture)


def test_scoped_token_from_the_cli(
    gateway: tuple[Path, MemoryStore, str | None],  # noqa: F811
) -> None:
    data_dir = gateway[0]
    admin = Cli(data_dir)
    # `memory token` builds every worker's verbs (the admin token's are the gateway's): not a
    # lean store verb
    out = admin("token", "create", "--name", "reader", "--bank", "main", "--read-only", lean=False)
    token, said = out.splitlines()[:2]
    assert "reader (read-only; bank main; every project)" in said
    assert token not in (data_dir / ".state" / "store" / "tokens.json").read_text()
    assert "reader (read-only" in admin("token", "list", lean=False)

    reader = Cli(data_dir)
    reader.env["MEMORY_TOKEN"] = token
    # status builds every worker's verbs (not a lean store verb)
    assert "you are:   reader (read-only; bank main; every project)" in reader("status", lean=False)
    refused = reader("save", "The user likes tea", code=2, lean=False)
    assert "error: permission_denied:" in refused and "'write' permission" in refused
    assert "'admin' permission" in reader("token", "list", code=2, lean=False)
    assert gateway[1].list().total == 0  # the refused save wrote nothing

    admin("token", "revoke", "reader", lean=False)
    assert "unauthenticated" in reader("status", code=2, lean=False)
