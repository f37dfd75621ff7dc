"""Where a hook's turn is redacted, and the hook log's mode.

The store redacts a turn before its outbox touches the disk, so a Stop hook sending it to a
gateway on loopback leaves the redactor unloaded (about a quarter of a second of its time);
to any other address it still redacts the turn before it leaves the process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from integrations.hooks import loopback
from shared.client.grpc import GrpcStoreClient
from tests.integrations.test_hooks import fire, hook_json

# ``memory`` that says on stderr whether the redactor got imported
MAIN_SAYS_REDACT = (
    "import sys\nfrom shared.cli import main\ncode = main()\n"
    "sys.stderr.write('REDACT-IMPORTED\\n' if 'shared.redact' in sys.modules else '')\n"
    "sys.exit(code)\n"
)



def test_a_stop_hook_through_a_loopback_gateway_loads_no_redactor_and_the_turn_is_stored_redacted(
    memory_env: dict[str, str], fresh_store: Any, project: Path, tmp_path: Path
) -> None:
    from grpc_gateway.server import build_server
    from shared.client import gateway_file

    # Given a gateway on loopback over a store on its data dir, behind a token its record
    # names (as `memory up` leaves it)
    data = tmp_path / "served"
    store = fresh_store(data_dir=data)
    token_file = tmp_path / "token"
    token_file.write_text("hook-gateway-token\n")
    server, port = build_server(store, port=0, token="hook-gateway-token")
    server.start()
    gateway_file.write(data, f"127.0.0.1:{port}", token_file)
    log = tmp_path / "h.log"
    env = {**memory_env, "MEMORY_DATA_DIR": str(data), "MEMORY_HOOK_LOG": str(log)}
    try:
        # When the agent's Stop hook runs
        done = subprocess.run(
            [sys.executable, "-c", MAIN_SAYS_REDACT, "hook", "Stop"],
            input=hook_json("Stop", project),
            env=env, cwd=project / "src", capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        server.stop(None)
    # Then it never loaded the redactor, and the store filed the turn redacted
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert "REDACT-IMPORTED" not in done.stderr
    assert not log.exists()
    jobs = store.outbox_list().jobs
    assert len(jobs) == 1 and jobs[0].session_id == "abc123-session"
    user = store.outbox_job(jobs[0].job_id).messages[0].content
    assert "staging profile" in user and "ghp_" not in user and "[REDACTED:" in user
    stored = "".join(p.read_text("utf-8", errors="replace") for p in data.rglob("*") if p.is_file())
    assert "ghp_" not in stored  # nor anywhere on the disk


@pytest.mark.parametrize(
    ("address", "near"),
    [
        ("127.0.0.1:50051", True),
        ("127.3.2.1:1", True),
        ("[::1]:50051", True),
        ("localhost:50051", True),
        ("LocalHost:9", True),
        ("192.0.2.7:50051", False),
        ("10.0.0.1:50051", False),
        ("[2001:db8::1]:50051", False),
        ("memory.example.com:443", False),
        ("localhost.example.com:443", False),
        ("0.0.0.0:50051", False),
    ],
)
def test_only_a_gateway_on_loopback_counts_as_this_machine(address: str, near: bool) -> None:
    client = GrpcStoreClient(address)  # the channel connects lazily: nothing is dialled
    try:
        assert loopback(client) is near
    finally:
        client.close()


def test_a_store_that_is_no_gateway_client_is_not_loopback(embedded: Any) -> None:
    assert loopback(embedded) is False

    class Near(GrpcStoreClient):  # a subclass may send the turn anywhere
        pass

    sub = Near("127.0.0.1:1")
    try:
        assert loopback(sub) is False
    finally:
        sub.close()


@pytest.mark.parametrize(
    ("address", "redacted"), [("192.0.2.7:50051", True), ("127.0.0.1:50051", False)]
)
def test_a_turn_to_a_remote_gateway_is_redacted_before_it_leaves_the_hook(
    project: Path, tmp_path: Path, address: str, redacted: bool
) -> None:
    sent: list[Any] = []
    client = GrpcStoreClient(address)
    # the client's own type (what ``loopback`` checks), its calls recorded instead of sent
    client.turn_completed = lambda session_id, **kw: sent.append(kw["messages"])  # type: ignore[method-assign]
    try:
        code, out, log = fire(client, "Stop", hook_json("Stop", project), tmp_path, bank="ops")
    finally:
        client.close()
    assert (code, out, log) == (0, "", "")
    said = json.dumps(sent)
    assert "staging profile" in said
    assert ("ghp_" not in said and "[REDACTED:github_token]" in said) is redacted
    assert ("ghp_" in said) is not redacted


def test_the_hook_log_is_created_private(embedded: Any, tmp_path: Path) -> None:
    code, _, log = fire(embedded, "Stop", '{"session_id": "s"}', tmp_path)
    assert code == 0 and "no transcript_path" in log
    assert (tmp_path / "hooks.log").stat().st_mode & 0o777 == 0o600
