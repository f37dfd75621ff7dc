"""``memory hook <event>``: recorded Claude Code hook JSON (golden/hook_*.json) and a recorded
transcript (golden/transcript.jsonl) in; the agent's output format out; the finished turn in the
outbox, redacted; nothing printed and exit 0 whenever anything fails."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from integrations.hooks import (
    EVENTS,
    HookOptions,
    bank_for,
    claude_code_settings,
    finished_turn,
    log_path,
    project_bank,
    run_hook,
    write_settings,
)
from shared.contract import errors
from tests.integrations.conftest import GOLDEN

GOLDEN_FILES = {
    "SessionStart": "hook_session_start.json",
    "UserPromptSubmit": "hook_user_prompt_submit.json",
    "Stop": "hook_stop.json",
    "SessionEnd": "hook_session_end.json",
}


# ``memory`` that says on stderr whether Ray got imported (a hook through the gateway must not)
MAIN_SAYS_RAY = (
    "import sys\nfrom shared.cli import main\ncode = main()\n"
    "sys.stderr.write('RAY-IMPORTED\\n' if 'ray' in sys.modules else '')\n"
    "sys.exit(code)\n"
)



def hook_json(event: str, project: Path) -> str:
    raw = (GOLDEN / GOLDEN_FILES[event]).read_text("utf-8")
    transcript = str(project.parent / "transcript.jsonl")
    return raw.replace("TRANSCRIPT", transcript).replace("CWD", str(project / "src"))


def fire(
    store: Any, event: str, stdin: str, tmp_path: Path, **options: Any
) -> tuple[int, str, str]:
    """(exit code, stdout, hook log) of one in-process hook call on ``store``."""
    out = io.StringIO()
    env = {"MEMORY_HOOK_LOG": str(tmp_path / "hooks.log"), **options.pop("env", {})}
    code = run_hook(
        HookOptions(event=event, **options),
        stdin=io.StringIO(stdin),
        stdout=out,
        env=env,
        open_store=lambda data_dir, timeout: store,
        close_store=lambda s: None,
    )
    log = tmp_path / "hooks.log"
    return code, out.getvalue(), log.read_text("utf-8") if log.exists() else ""


def context_of(stdout: str, event: str) -> str:
    answer = json.loads(stdout)
    assert set(answer) == {"hookSpecificOutput"}
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


# -- each event --------------------------------------------------------------------------------


def test_session_start_gives_the_project_banks_rules(
    embedded: Any, project: Path, tmp_path: Path
) -> None:
    # Given a bank named for the project, with a rule
    embedded.bank_create("ship-it")
    embedded.rule_set("deploys", "Always deploy with the staging profile first.", bank="ship-it")
    # When the session starts
    code, out, log = fire(embedded, "SessionStart", hook_json("SessionStart", project), tmp_path)
    # Then its rules come back as added context
    assert code == 0 and log == ""
    assert "staging profile first" in context_of(out, "SessionStart")


def test_user_prompt_gets_the_recalled_block(embedded: Any, project: Path, tmp_path: Path) -> None:
    embedded.bank_create("ship-it")
    embedded.save("Staging deploys run tools/ship.sh with --profile staging", bank="ship-it")
    embedded.save("The user likes short answers", bank="main")  # another bank: not shown
    stdin = hook_json("UserPromptSubmit", project)
    code, out, _ = fire(embedded, "UserPromptSubmit", stdin, tmp_path)
    assert code == 0
    text = context_of(out, "UserPromptSubmit")
    assert "tools/ship.sh" in text and 'bank="ship-it"' in text
    assert "short answers" not in text


def test_stop_hands_the_redacted_turn_to_the_outbox_once(
    embedded: Any, project: Path, tmp_path: Path
) -> None:
    # Given a session bound to the project's bank by its first prompt
    embedded.bank_create("ship-it")
    fire(embedded, "UserPromptSubmit", hook_json("UserPromptSubmit", project), tmp_path)
    # When the turn stops, then at session end
    code, out, log = fire(embedded, "Stop", hook_json("Stop", project), tmp_path)
    again = fire(embedded, "SessionEnd", hook_json("SessionEnd", project), tmp_path)
    # Then one job holds the finished turn, in the project's bank, with the token redacted
    assert (code, out, log) == (0, "", "")
    assert again[:2] == (0, "")
    jobs = embedded.outbox_list().jobs
    assert len(jobs) == 1 and jobs[0].bank == "ship-it" and jobs[0].session_id == "abc123-session"
    job = embedded.outbox_job(jobs[0].job_id)
    roles = [m.role for m in job.messages]
    assert roles == ["user", "assistant"]
    user, assistant = (m.content for m in job.messages)
    assert "staging profile" in user and "ghp_" not in user and "[REDACTED:" in user
    assert "Noted: deploys use the staging profile" in assistant
    assert "I will not repeat your token." in assistant  # the answer's two lines, joined
    assert "sub-agent" not in assistant and "tool_use" not in assistant


def test_finished_turn_reads_only_the_last_prompt_and_its_answer(project: Path) -> None:
    turn = finished_turn(str(project.parent / "transcript.jsonl"))
    assert [m["role"] for m in turn] == ["user", "assistant"]
    assert turn[0]["content"].startswith("From now on always deploy")
    assert turn[0]["timestamp"] == "2026-11-30T10:01:00.000Z"
    assert "Earlier question" not in json.dumps(turn)  # the previous turn is not re-sent


# -- never break the agent ---------------------------------------------------------------------


class DownStore:
    def __getattr__(self, name: str) -> Any:
        raise errors.SourceUnavailableError("no memory store is running")


@pytest.mark.parametrize("event", EVENTS)
def test_store_down_prints_nothing_and_exits_0(event: str, project: Path, tmp_path: Path) -> None:
    code, out, log = fire(DownStore(), event, hook_json(event, project), tmp_path)
    assert (code, out) == (0, "")
    assert f"{event}: failed: source_unavailable: no memory store is running" in log


@pytest.mark.parametrize(
    ("event", "stdin", "why"),
    [
        ("UserPromptSubmit", "not json", "not JSON"),
        ("UserPromptSubmit", "[1, 2]", "JSON object"),
        ("UserPromptSubmit", '{"prompt": "hi"}', "no session_id"),
        ("Stop", '{"session_id": "s", "hook_event_name": "SessionStart"}', "is for"),
        ("Stop", '{"session_id": "s"}', "no transcript_path"),
        ("PreToolUse", '{"session_id": "s"}', "unknown hook event"),
    ],
)
def test_bad_input_prints_nothing_and_exits_0(
    embedded: Any, event: str, stdin: str, why: str, tmp_path: Path
) -> None:
    code, out, log = fire(embedded, event, stdin, tmp_path)
    assert (code, out) == (0, "")
    assert why in log


def test_a_missing_transcript_is_logged(embedded: Any, tmp_path: Path) -> None:
    stdin = json.dumps({"session_id": "s", "transcript_path": str(tmp_path / "gone.jsonl")})
    code, out, log = fire(embedded, "Stop", stdin, tmp_path)
    assert (code, out) == (0, "") and "cannot read the transcript" in log


def test_the_command_with_the_store_unreachable_exits_0_silently(
    memory_cmd: list[str], memory_env: dict[str, str], fresh_store: Any, tmp_path: Path
) -> None:
    # Given a data dir another store holds (the hook cannot open it)
    data = tmp_path / "held"
    fresh_store(data_dir=data)
    log = tmp_path / "hooks.log"
    stdin = json.dumps({"session_id": "s", "cwd": str(tmp_path), "prompt": "deploy?"})
    done = subprocess.run(
        [*memory_cmd, "--data-dir", str(data), "hook", "UserPromptSubmit"],
        input=stdin,
        env={**memory_env, "MEMORY_HOOK_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert "UserPromptSubmit: failed: source_unavailable:" in log.read_text("utf-8")


def test_the_command_answers_in_claude_codes_format(
    memory_cmd: list[str], memory_env: dict[str, str], fresh_store: Any, project: Path
) -> None:
    data = project.parent / "data"
    store = fresh_store(data_dir=data)
    store.bank_create("ship-it")
    store.save("Staging deploys run tools/ship.sh with --profile staging", bank="ship-it")
    store.close()
    done = subprocess.run(
        [*memory_cmd, "--data-dir", str(data), "hook", "UserPromptSubmit"],
        input=hook_json("UserPromptSubmit", project),
        env={**memory_env, "MEMORY_HOOK_LOG": str(project.parent / "hooks.log")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "tools/ship.sh" in context_of(done.stdout, "UserPromptSubmit")


def test_a_hook_in_the_project_folder_finds_the_gateway_through_the_users_pointer(
    memory_env: dict[str, str], fresh_store: Any, project: Path, tmp_path: Path
) -> None:
    """Claude Code runs hooks in the project folder, where no ./data/memory records the
    gateway: each hook went over Ray (1.4-2.2 s a prompt) unless MEMORY_DATA_DIR was set."""
    from grpc_gateway.server import build_server
    from shared.client import admin_token, gateway_file

    # Given the gateway `memory up` started on its data dir, with the user's admin token,
    # and up's pointer in the user's state folder
    data = tmp_path / "served"
    store = fresh_store(data_dir=data)
    store.save("Staging deploys run tools/ship.sh with --profile staging")
    state = tmp_path / "state"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(state))
        token_file = admin_token.ensure()
        server, port = build_server(store, port=0, token=admin_token.load(token_file))
        server.start()
        gateway_file.write(data, f"127.0.0.1:{port}", token_file)
        gateway_file.point(data)
    env = {**memory_env, "XDG_STATE_HOME": str(state), "MEMORY_HOOK_LOG": str(tmp_path / "h.log")}
    env.pop("MEMORY_DATA_DIR", None)
    try:
        # When the agent's prompt hook runs in the project folder
        done = subprocess.run(
            [sys.executable, "-c", MAIN_SAYS_RAY, "hook", "UserPromptSubmit"],
            input=hook_json("UserPromptSubmit", project),
            env=env, cwd=project / "src", capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        server.stop(None)
    # Then it answers from the running store, through the gateway, without Ray
    assert done.returncode == 0, done.stderr
    assert "tools/ship.sh" in context_of(done.stdout, "UserPromptSubmit")
    assert "RAY-IMPORTED" not in done.stderr
    assert not (tmp_path / "h.log").exists()


# -- the bank rule -----------------------------------------------------------------------------


def test_the_bank_comes_from_the_projects_root_folder(embedded: Any, project: Path) -> None:
    assert project_bank(str(project / "src")) == "ship-it"  # the .git folder's parent
    assert project_bank("/") is None
    # a project bank that does not exist yet: the store's default bank
    assert bank_for(embedded, str(project / "src"), override=None, env={}) is None
    embedded.bank_create("ship-it")
    assert bank_for(embedded, str(project / "src"), override=None, env={}) == "ship-it"
    # overrides: the flag, then the environment
    env = {"MEMORY_HOOK_BANK": "ops"}
    assert bank_for(embedded, str(project), override=None, env=env) == "ops"
    assert bank_for(embedded, str(project), override="x", env=env) == "x"


def test_the_log_lives_under_the_state_dir(tmp_path: Path) -> None:
    assert log_path({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "agent-memory" / "hooks.log"
    assert log_path({"MEMORY_HOOK_LOG": "/x/h.log"}) == Path("/x/h.log")


# -- install -----------------------------------------------------------------------------------


def test_install_prints_the_settings_snippet(
    memory_cmd: list[str], memory_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [*memory_cmd, "hook", "install", "claude-code", "--bank", "ops"],
        env=memory_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == claude_code_settings("memory", " --bank ops")
    hooks = json.loads(done.stdout)["hooks"]
    assert set(hooks) == set(EVENTS)
    assert hooks["Stop"][0]["hooks"][0] == {
        "type": "command",
        "command": "memory hook Stop --bank ops",
    }


def test_install_names_the_program_by_path_when_the_agents_path_would_not_find_it(
    memory_env: dict[str, str],
) -> None:
    # Given the venv's `memory`, run by its path as the README does (venv not activated)
    program = Path(sys.executable).with_name("memory")
    bare_path = os.pathsep.join(
        p for p in memory_env.get("PATH", "").split(os.pathsep) if Path(p) != program.parent
    )

    def installed(path: str) -> str:
        done = subprocess.run(
            [str(program), "hook", "install", "claude-code"],
            env={**memory_env, "PATH": path},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["hooks"]["Stop"][0]["hooks"][0]["command"])

    # When the PATH does not lead to it, then the hooks call it by its absolute path
    assert installed(bare_path) == f"{program.resolve()} hook Stop"
    # and by name when it does
    assert installed(os.pathsep.join([str(program.parent), bare_path])) == "memory hook Stop"


def test_install_write_merges_and_is_idempotent(tmp_path: Path) -> None:
    # Given settings with a hook of the user's own and another key
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    own = {"hooks": [{"type": "command", "command": "echo mine"}]}
    path.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [own]}}))
    # When installed twice
    write_settings(path)
    merged = write_settings(path)
    # Then ours are added once per event and the user's kept
    assert merged == json.loads(path.read_text())
    assert merged["model"] == "opus"
    assert merged["hooks"]["Stop"][0] == own
    assert [len(merged["hooks"][e]) for e in EVENTS] == [1, 1, 2, 1]


def test_install_refuses_settings_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{not json")
    with pytest.raises(errors.InvalidArgumentError):
        write_settings(path)
    assert path.read_text() == "{not json"  # bad input writes nothing


def test_the_turn_is_redacted_before_it_leaves_the_hook(
    embedded: Any, project: Path, tmp_path: Path
) -> None:
    sent: list[Any] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(embedded, name)

        def turn_completed(self, session_id: str, **kwargs: Any) -> Any:
            sent.append(kwargs["messages"])
            return embedded.turn_completed(session_id, **kwargs)

    code, _, log = fire(Recording(), "Stop", hook_json("Stop", project), tmp_path)
    assert (code, log) == (0, "")
    assert "ghp_" not in json.dumps(sent) and "[REDACTED:github_token]" in json.dumps(sent)


@pytest.mark.ray
def test_hooks_on_the_running_store(
    store_actor: Any, unique_bank: str, project: Path, tmp_path: Path
) -> None:
    # Given the running store (the session's actor) with a bank and a rule for the session
    store_actor.bank_create(unique_bank)
    store_actor.rule_set("deploys", "Staging before prod.", bank=unique_bank)
    store_actor.save("Staging deploys run tools/ship.sh", bank=unique_bank)
    session = f"{unique_bank}-session"

    def event(name: str) -> str:
        raw = json.loads(hook_json(name, project))
        return json.dumps({**raw, "session_id": session})

    # When the four events fire through StoreClient
    start = fire(store_actor, "SessionStart", event("SessionStart"), tmp_path, bank=unique_bank)
    prompt = fire(
        store_actor, "UserPromptSubmit", event("UserPromptSubmit"), tmp_path, bank=unique_bank
    )
    stop = fire(store_actor, "Stop", event("Stop"), tmp_path, bank=unique_bank)
    # Then the rules, then the recalled block, then one job in the outbox for that bank
    assert "Staging before prod." in context_of(start[1], "SessionStart")
    assert "tools/ship.sh" in context_of(prompt[1], "UserPromptSubmit")
    assert stop == (0, "", "")
    mine = [j for j in store_actor.outbox_list().jobs if j.session_id == session]
    assert [(j.bank, j.messages) for j in mine] == [(unique_bank, 2)]


# -- store shards ------------------------------------------------------------------------------


def test_a_hooks_turn_reaches_its_banks_shard_from_a_fresh_process(
    memory_cmd: list[str], memory_env: dict[str, str], project: Path
) -> None:
    """Each hook event is its own process; the project's bank lives on shard 1 of 2, the
    default bank on shard 0: the Stop process must still file the turn on shard 1."""
    from shared.client import connect
    from shared.client.sharded import ShardedStoreClient

    # Given two embedded shards and the project's bank on shard 1
    data = project.parent / "data"
    env = {**memory_env, "MEMORY_STORE_SHARDS": "2", "MEMORY_HOOK_LOG": str(data / "h.log")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_STORE_SHARDS", "2")
        store = connect(f"file:{data!s}")
        assert isinstance(store, ShardedStoreClient)
        bank = next(f"proj-{i}" for i in range(100) if store.owner(f"proj-{i}") == 1)
        assert store.owner(None) == 0
        store.bank_create(bank)
        store.save("Staging deploys run tools/ship.sh with --profile staging", bank=bank)
        store.close()
    env["MEMORY_HOOK_BANK"] = bank

    def hook(event: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*memory_cmd, "--data-dir", str(data), "hook", event],
            input=hook_json(event, project),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    # When the prompt and the stop each run in a process of their own
    prompt = hook("UserPromptSubmit")
    stop = hook("Stop")
    # Then the prompt was given the bank's memories and the turn is queued on shard 1, there
    assert prompt.returncode == 0 and "tools/ship.sh" in context_of(
        prompt.stdout, "UserPromptSubmit"
    )
    assert stop.returncode == 0 and not (data / "h.log").exists()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_STORE_SHARDS", "2")
        store = connect(f"file:{data!s}")
        assert isinstance(store, ShardedStoreClient)
        try:
            on = [[(j.session_id, j.bank) for j in s.outbox_list().jobs] for s in store.shards]
        finally:
            store.close()
    assert on == [[], [("abc123-session", bank)]]


# -- an adversarial review: what the agent's pipe and a transcript path may be ---------------


def hook_cmd(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path, event: str
) -> tuple[list[str], dict[str, str], Path]:
    """``memory --data-dir <tmp>/data hook <event>``, its environment and its log."""
    log = tmp_path / "hooks.log"
    cmd = [*memory_cmd, "--data-dir", str(tmp_path / "data"), "hook", event]
    return cmd, {**memory_env, "MEMORY_HOOK_LOG": str(log)}, log


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_transcript_that_is_no_regular_file_never_holds_the_hook(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    """A FIFO blocked the Stop hook for good (no writer ever comes); ``/dev/zero`` (size 0,
    endless) was read until memory ran out."""
    # Given a transcript path that names a FIFO or an endless device
    if kind == "fifo":
        path = tmp_path / "transcript.fifo"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, "Stop")
    stdin = json.dumps({"session_id": "s", "transcript_path": str(path)})
    # When the Stop hook runs, then it ends at once: nothing printed, exit 0, the reason logged
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert "cannot read the transcript" in log.read_text("utf-8")
    assert "not a regular file" in log.read_text("utf-8")


def test_a_big_prompt_is_read_to_its_end(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """The hook read 1 MiB of stdin and left: a pasted 2 MB log made the agent's write into
    the pipe fail (EPIPE) and the cut-off JSON was logged as "not JSON" (no recall)."""
    from integrations.hooks import MAX_STDIN

    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, "UserPromptSubmit")
    save = subprocess.run(
        [*cmd[:-2], "save", "The deploy script lives in tools/ship.sh"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert save.returncode == 0, save.stderr

    def prompt_of(size: int) -> bytes:
        pasted = "where is the deploy script? " + "log line " * (size // 9)
        return json.dumps({"session_id": "s", "cwd": str(tmp_path), "prompt": pasted}).encode()

    for size, answered in ((2 << 20, True), (MAX_STDIN + (1 << 20), False)):
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        # When the agent writes it all (a BrokenPipeError here is the bug) and closes the pipe
        out, _ = proc.communicate(prompt_of(size), timeout=120)
        assert proc.returncode == 0
        if answered:  # Then a prompt over the old cap is answered
            assert "tools/ship.sh" in context_of(out.decode(), "UserPromptSubmit")
        else:  # and one over the cap is refused, naming the limit, after reading it all
            assert out == b""
            assert f"the limit is {MAX_STDIN}" in log.read_text("utf-8")


def test_a_stray_non_utf8_byte_costs_the_byte_not_the_hook(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, "UserPromptSubmit")
    # stdin decoded strictly, as under a macOS agent's LANG=en_US.UTF-8
    env = {**env, "PYTHONIOENCODING": "utf-8:strict"}
    subprocess.run(
        [*cmd[:-2], "save", "The deploy script lives in tools/ship.sh"], env=env, timeout=60
    )
    stdin = b'{"session_id": "s", "prompt": "where is the deploy \xff\xfe script?"}'
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0
    assert "tools/ship.sh" in context_of(done.stdout.decode(), "UserPromptSubmit")
    assert not log.exists()


def test_the_hook_log_never_holds_a_secret_from_the_input(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """A failure's message quotes the input it refused (here the transcript path, or the
    event the input names), and went to the log as it was: secrets and all, newlines
    splitting it into several lines, as long as the input."""
    token = "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7C"
    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, "Stop")
    for stdin in (
        {"session_id": "s", "transcript_path": f"/nowhere/{token}/x\ny.jsonl"},
        {"session_id": "s", "hook_event_name": f"token={token} " + "x" * 100_000},
    ):
        done = subprocess.run(
            cmd, input=json.dumps(stdin).encode(), env=env, capture_output=True, timeout=60
        )
        assert (done.returncode, done.stdout) == (0, b"")
    lines = log.read_text("utf-8").splitlines()
    assert len(lines) == 2 and all(len(line) < 1100 for line in lines)
    assert "cannot read the transcript" in lines[0] and "is for" in lines[1]
    assert "ghp_" not in log.read_text("utf-8")
    assert "[REDACTED:github_token]" in lines[0]


def test_install_write_keeps_a_symlinked_settings_file_and_its_mode(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """Settings kept in a dotfiles repository and linked into ~/.claude: the link was
    replaced by a plain file (the repository never saw the hooks, and the user's next
    dotfiles sync dropped them), and a 0600 file became 0644."""
    # Given ~/.claude/settings.json, a link to a private file in a dotfiles folder
    target = tmp_path / "dotfiles" / "claude-settings.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"model": "opus"}))
    target.chmod(0o600)
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    # When the hooks are installed through the link
    done = subprocess.run(
        [*memory_cmd, "hook", "install", "claude-code", "--write", "--settings", str(link)],
        env=memory_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # Then the link stays a link, and the file it names holds the hooks, still private
    assert link.is_symlink() and link.resolve() == target.resolve()
    merged = json.loads(target.read_text())
    assert merged["model"] == "opus" and set(merged["hooks"]) == set(EVENTS)
    assert target.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (["--bnak", "ship-it"], "unrecognized arguments: --bnak ship-it"),
        (["--bank"], "usage: argument --bank: expected one argument"),
    ],
)
def test_a_usage_error_in_the_hook_command_never_blocks_the_prompt(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path, words: list[str], why: str
) -> None:
    """A mistyped flag in the hook's command (settings edited by hand, or written by another
    version) exited 2 from argparse: Claude Code takes exit 2 as "block this prompt", so every
    prompt was erased until the settings were fixed."""
    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, "UserPromptSubmit")
    stdin = json.dumps({"session_id": "s", "prompt": "where is the deploy script?"})
    done = subprocess.run(
        [*cmd, *words], input=stdin, env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert f"UserPromptSubmit: failed: {why}" in log.read_text("utf-8")
    # install is no hook: its usage errors stay usage errors
    install = subprocess.run(
        [*memory_cmd, "hook", "install", "claude-code", *words],
        env=memory_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert install.returncode == 2 and install.stdout == ""


def test_the_answer_survives_any_stdout_encoding(
    memory_cmd: list[str], memory_env: dict[str, str], tmp_path: Path
) -> None:
    """The answer was written as UTF-8 text: under an ASCII stdout (a non-UTF-8 locale,
    PYTHONIOENCODING=ascii) a memory's "café" failed the write: no answer reached the agent
    (before this review, with a traceback and exit 1)."""
    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, "UserPromptSubmit")
    env = {**env, "PYTHONIOENCODING": "ascii:strict"}
    subprocess.run(
        [*cmd[:-2], "save", "The team meets at the café on Fridays ☕"], env=memory_env, timeout=60
    )
    stdin = json.dumps({"session_id": "s", "prompt": "where does the team meet on Fridays?"})
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "café on Fridays ☕" in context_of(done.stdout, "UserPromptSubmit")
    assert not log.exists()  # nothing failed


@pytest.mark.parametrize(
    ("bank", "why"),
    [("no-such-bank", "bank 'no-such-bank' does not exist"), ("Bad Bank", "invalid bank name")],
)
@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_a_bank_the_store_cannot_serve_is_logged(
    memory_cmd: list[str],
    memory_env: dict[str, str],
    tmp_path: Path,
    event: str,
    bank: str,
    why: str,
) -> None:
    """`--bank` (or MEMORY_HOOK_BANK) naming a bank that does not exist, or no valid name:
    the store served no memory and said why in its notes; the hook printed nothing and
    logged nothing, so memory was off without a word."""
    cmd, env, log = hook_cmd(memory_cmd, memory_env, tmp_path, event)
    stdin = json.dumps({"session_id": "s", "prompt": "where is the deploy script?"})
    env = {**env, "MEMORY_HOOK_BANK": bank}
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert f"{event}: no memory: " in log.read_text("utf-8")
    assert why in log.read_text("utf-8")
