"""The ``memory`` CLI: help for every command (a user learns the CLI from ``--help``), every
store verb through the embedded mode (``--data-dir``), ``--json``, exit codes, and one real
``up``/``down`` run."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from shared.cli import build_parser, run
from shared.client import gateway_file
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from tests.shared.conftest import MEMORY, OwnCluster, free_ports, isolated_env


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[Any]:
    """(path, help, subparser) for every command and nested command of the parser."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                path = (*prefix, name)
                found.append((path, helps.get(name), sub))
                found += _commands(sub, path)
    return found


COMMANDS = _commands(build_parser())


class Cli:
    """Runs ``memory`` in-process: ``cli("save", "x")`` → (exit code, stdout, stderr)."""

    def __init__(self, data_dir: Path, store: MemoryStore | None = None) -> None:
        self.data_dir = data_dir
        self.store = store

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = run(["--data-dir", str(self.data_dir), *argv], store=self.store, out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    def json(self, *argv: str) -> Any:
        code, out, err = self("--json", *argv)
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "data")


# -- (a) help --------------------------------------------------------------------------------


def test_every_command_is_listed() -> None:
    names = {path for path, _, _ in COMMANDS}
    for wanted in ("up", "down", "stop", "status", "save", "recall", "get", "list", "update",
                   "delete", "pin", "unpin", "supersede", "tags", "watch", "doctor", "reload",
                   "describe", "capabilities", "configure", "redact", "purge"):  # fmt: skip
        assert (wanted,) in names
    for group, verbs in (
        ("bank", ("create", "list", "delete")),
        ("rule", ("list", "show", "set", "rm", "pending", "approve", "reject")),
    ):
        for verb in verbs:
            assert (group, verb) in names


@pytest.mark.parametrize("path", [c[0] for c in COMMANDS], ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    help_text, parser = next((h, p) for c, h, p in COMMANDS if c == path)
    assert help_text and help_text.strip(), f"`memory {' '.join(path)}` has no help"
    # one sentence, as `memory --help` lists them all together
    assert help_text[0].isupper() and help_text.endswith("."), help_text
    if parser.get_default("verb") is not None:  # our own verbs: every option explained too
        for action in parser._actions:
            assert action.help, f"`memory {' '.join(path)}` {action.dest} has no help"
    with pytest.raises(SystemExit) as exited:
        run([*path, "--help"])
    assert exited.value.code == 0
    assert f"usage: memory {' '.join(path)}" in capsys.readouterr().out


# -- (b) the embedded CLI --------------------------------------------------------------------


def test_save_recall_get_list_roundtrip(cli: Cli) -> None:
    code, out, err = cli("save", "The user prefers tabs over spaces", "--tag", "style", "--pin")
    assert (code, err) == (0, "")
    assert out.startswith("saved user-prefers-tabs-spaces in bank main")
    cli(
        "save",
        "Deploys happen on Fridays",
        "--tag",
        "ops",
        "--entity",
        "alice",
        "--type",
        "project",
    )

    code, out, _ = cli("recall", "tabs or spaces")
    assert code == 0
    rank, relevance, mem_id, date = out.split()[:4]
    assert (rank, mem_id) == ("1.", "user-prefers-tabs-spaces")
    assert 0 < float(relevance) <= 1 and len(date) == 10

    got = cli.json("get", "deploys-happen-fridays")
    assert got["memory"]["entities"] == ["alice"] and got["memory"]["type"] == "project"
    listed = cli.json("list", "--tag", "style")
    assert [m["id"] for m in listed["memories"]] == ["user-prefers-tabs-spaces"]
    assert listed["total"] == 1
    code, out, _ = cli("list")
    assert "(2 of 2 in bank main)" in out and "  pinned  The user prefers tabs" in out


def test_list_pages_and_all(cli: Cli) -> None:
    for i in range(5):
        cli("save", f"fact {i} about paging", "--id", f"fact-{i}")
    first = cli.json("list", "--page-size", "2")
    assert len(first["memories"]) == 2 and first["total"] == 5
    second = cli.json("list", "--page-size", "2", "--page-token", first["next_page_token"])
    assert {m["id"] for m in first["memories"]}.isdisjoint(m["id"] for m in second["memories"])
    everything = cli.json("list", "--page-size", "2", "--all")
    assert sorted(m["id"] for m in everything["memories"]) == [f"fact-{i}" for i in range(5)]
    assert everything["next_page_token"] is None


def test_update_pin_unpin_delete(cli: Cli) -> None:
    cli("save", "The user lives in Lisbon", "--id", "home")
    updated = cli.json("update", "home", "--text", "The user lives in Porto", "--tag", "place")
    assert updated["memory"]["text"] == "The user lives in Porto"
    assert updated["memory"]["tags"] == ["place"] and updated["memory"]["revision"] == 1
    assert cli.json("pin", "home")["memory"]["pinned"] is True
    assert cli.json("unpin", "home")["memory"]["pinned"] is False
    assert cli.json("update", "home", "--pin")["memory"]["pinned"] is True
    code, out, _ = cli("get", "home")
    assert code == 0 and "Porto" in out and "pinned        yes" in out
    cli("unpin", "home")
    code, out, _ = cli("delete", "home", "--reason", "moved")
    assert code == 0 and "deleted       20" in out  # the row says when
    assert cli.json("list")["total"] == 0
    assert cli.json("list", "--include-superseded")["total"] == 1


def test_update_at_a_revision_refuses_a_stale_edit(cli: Cli) -> None:
    cli("save", "The user lives in Lisbon", "--id", "home")
    assert cli.json("update", "home", "--text", "Porto", "--revision", "0")["memory"]["revision"]
    code, _, err = cli("update", "home", "--text", "Faro", "--revision", "0")
    assert code == 2 and err.startswith("error: invalid_argument: home changed since it was read")
    assert cli.json("get", "home")["memory"]["text"] == "Porto"


def test_occurred_at_takes_iso_dates_and_datetimes(cli: Cli) -> None:
    saved = cli.json("save", "Caroline went to a support group", "--occurred-at", "2023-05-07")
    assert saved["memory"]["occurred_at"] == 1_683_417_600_000
    mem_id = saved["memory"]["id"]
    moved = cli.json("update", mem_id, "--occurred-at", "2023-05-08T13:56+02:00")
    assert moved["memory"]["occurred_at"] == 1_683_546_960_000  # 11:56 UTC
    code, out, _ = cli("get", mem_id)
    assert code == 0 and "occurred      2023-05-08" in out
    stated = out.split("stated        ")[1][:10]
    assert stated != "2023-05-08"  # saved today, about then
    # recall and list date its line by when it happened, as preview's recalled block and
    # get do (they showed the day it was saved)
    for argv in (("recall", "Caroline support group"), ("list",)):
        code, out, _ = cli(*argv)
        assert code == 0 and f"{mem_id}  2023-05-08  Caroline" in out and stated not in out
    code, out, _ = cli("preview", "what did Caroline do?")
    assert "- [2023-05-08] Caroline went to a support group" in out
    code, out, err = cli("save", "x", "--occurred-at", "last tuesday")
    assert code == 2 and out == "" and err.startswith("error: invalid_argument:")
    code, _, err = cli("save", "x", "--occurred-at", "1960-01-01")
    assert code == 2 and "negative" in err
    assert cli.json("list")["total"] == 1


def test_recall_explains_and_filters_and_preview_shows_the_cost(cli: Cli) -> None:
    cli("save", "The staging server is called kestrel-stg", "--id", "staging")
    cli("save", "The user drinks green tea every morning", "--id", "tea")
    code, out, _ = cli("recall", "what is the staging server called", "--explain")
    lines = out.splitlines()
    assert code == 0 and "staging" in lines[0]
    assert lines[1].strip().startswith("why: terms ") and "server" in lines[1]
    kept = cli.json("recall", "staging server tea", "--min-relevance", "0.5")
    assert [m["memory"]["id"] for m in kept["memories"]] == ["staging"]
    assert kept["memories"][0]["why"]["terms"]
    code, _, err = cli("recall", "staging", "--min-relevance", "7")
    assert code == 2 and "min_relevance" in err
    code, out, _ = cli("preview", "what is the staging server called?")
    assert code == 0 and "this turn spends " in out and "min_relevance 0.30" in out
    assert "kestrel-stg" in out and "why each memory:" in out
    code, out, _ = cli("preview", "how do I reverse a linked list in Python?")
    assert "this turn spends 0 tokens" in out and "(none: nothing relevant enough)" in out


def test_supersede_and_tags(cli: Cli) -> None:
    cli("save", "Standup is at 9", "--id", "old", "--tag", "meetings")
    cli("save", "Standup is at 10", "--id", "new", "--tag", "meetings", "--tag", "team")
    code, out, _ = cli("supersede", "old", "--by", "new", "--reason", "moved", "--reinforce")
    assert code == 0 and out.strip() == "old superseded by new (reinforced)"
    assert cli.json("get", "old")["memory"]["superseded_by"] == "new"
    assert cli.json("get", "new")["memory"]["corroboration"] == 1
    tags = cli.json("tags")["tags"]
    assert tags == [{"tag": "meetings", "count": 1}, {"tag": "team", "count": 1}]
    code, out, _ = cli("recall", "standup", "--include-superseded", "--limit", "5")
    assert "old" in out and "new" in out


def test_banks(cli: Cli) -> None:
    code, out, _ = cli("bank", "create", "work", "--description", "job things")
    assert code == 0 and out.startswith("created: bank work")
    assert cli.json("bank", "create", "work")["created"] is False
    cli("save", "work fact", "--bank", "work")
    banks = {b["name"]: b for b in cli.json("bank", "list")["banks"]}
    assert banks["work"]["memories"] == 1 and banks["work"]["description"] == "job things"
    code, out, _ = cli("bank", "delete", "work")
    assert code == 0 and ".trash" in out
    assert "work" not in {b["name"] for b in cli.json("bank", "list")["banks"]}


def test_rules(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    style = tmp_path / "style.md"
    style.write_text("Use tabs.\n", "utf-8")
    assert cli("rule", "set", "style", "--file", str(style))[0] == 0
    cli("rule", "set", "tone", "--content", "Be brief.")
    monkeypatch.setattr(sys, "stdin", io.StringIO("From stdin."))
    cli("rule", "set", "piped")
    rules = {r["name"]: r["content"] for r in cli.json("rule", "list")["rules"]}
    assert rules == {"piped": "From stdin.", "style": "Use tabs.\n", "tone": "Be brief."}
    assert cli("rule", "show", "tone")[1] == "Be brief.\n"
    assert cli("rule", "rm", "tone")[1].strip() == "rule tone removed in bank main"
    code, _, err = cli("rule", "rm", "tone")
    assert code == 2 and err.startswith("error: not_found:")
    code, _, err = cli("rule", "set", "x", "--file", str(tmp_path / "missing.md"))
    assert code == 2 and err.startswith("error: invalid_argument: cannot read")


SSHPASS = "sshpass -p 'hunter2Xy9qW' ssh deploy@host"


def test_writes_that_redact_say_what_kinds(cli: Cli) -> None:
    # rule set, bank create, save, update, supersede and delete name the kinds they redacted
    code, out, _ = cli("rule", "set", "deploy", "--content", f"Deploy with {SSHPASS}")
    assert code == 0 and out.strip() == "rule deploy saved in bank main; redacted: password"
    assert cli.json("rule", "set", "deploy", "--content", SSHPASS)["redacted"] == ["password"]
    assert "hunter2" not in cli("rule", "show", "deploy")[1]
    assert (
        cli("bank", "create", "ops", "--description", SSHPASS)[1]
        .rstrip()
        .endswith("; redacted: password")
    )
    saved = cli.json("save", f"deploy box: {SSHPASS}")
    assert (
        saved["redacted"] == ["password"]
        and saved["memory"]["id"] == "deploy-box-sshpass-p-ssh-deploy"
    )
    mem_id = saved["memory"]["id"]
    assert "redacted      password" in cli("update", mem_id, "--text", f"now {SSHPASS}")[1]
    other = cli.json("save", "plain fact")["memory"]["id"]
    out = cli("supersede", mem_id, "--by", other, "--reason", SSHPASS)[1]
    assert out.strip().endswith("; redacted: password")
    assert cli.json("delete", other, "--reason", SSHPASS)["redacted"] == ["password"]
    # and an identifier holding a credential is refused (exit 2, invalid_argument)
    code, _, err = cli(
        "save", "x", "--id", "xoxb-1234567890123-1234567890123-abcdefghijklmnopqrstuvwx"
    )
    assert code == 2 and err.startswith("error: invalid_argument:") and "credential" in err


def test_redact_rescan_and_purge(cli: Cli) -> None:
    kept = cli.json("save", "plain fact")["memory"]["id"]
    gone = cli.json("save", "deploy notes")["memory"]["id"]
    code, out, _ = cli("redact", "--rescan")
    assert code == 0 and out.strip() == "bank main: redacted 0 memories, 0 rules; nothing to redact"
    res = cli.json("redact", "--rescan", "--bank", "main", "--purge")
    assert res["banks"][0]["purged"] is True and res["kinds"] == []
    with pytest.raises(SystemExit):  # argparse: --rescan is the one mode there is
        cli("redact", "--purge")
    code, out, _ = cli("purge", gone)
    assert code == 0 and out.strip() == f"purged {gone} from bank main: 1 log line(s)"
    assert [m["id"] for m in cli.json("list")["memories"]] == [kept]
    code, _, err = cli("purge", gone)
    assert code == 2 and err.startswith("error: not_found:")


def test_operations(cli: Cli) -> None:
    code, out, _ = cli("doctor")
    assert code == 0 and out.startswith("ok")
    assert cli.json("doctor")["ok"] is True
    assert cli.json("describe")["name"] == "memory-store"
    assert "hybrid" in cli.json("capabilities")["recall_modes"]
    assert cli.json("configure", "recall_limit=3", "decay_half_life_days=30")["recall_limit"] == 3
    assert cli("reload")[1].startswith("reloaded")
    code, _, err = cli("configure", "nonsense=1")
    assert code == 2 and err.startswith("error: invalid_argument:")
    code, _, err = cli("configure", "no-equals-sign")
    assert code == 2 and "KEY=VALUE" in err


def test_watch_once_follows_the_pull_cursor(tmp_path: Path) -> None:
    # Events live in the store's RAM, so the CLI is given one store for all its calls
    store = MemoryStore(tmp_path / "data", clock=FakeClock())
    cli = Cli(tmp_path / "data", store=store)
    cli("save", "watched fact", "--bank", "w")
    cli("save", "other fact", "--id", "other")
    code, out, _ = cli("watch", "--once", "--bank", "w")
    assert code == 0
    assert [line.split()[1:4] for line in out.splitlines()] == [
        ["bank-changed", "created", "[w]"],
        ["item-changed", "created", "[w]"],
    ]
    code, out, _ = cli("--json", "watch", "--once", "--from", "3")
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["seq"] for e in events] == [4] and events[0]["memory"]["id"] == "other"
    code, out, _ = cli("watch", "--once", "--from", "4")
    assert out.strip() == "no events after cursor 4 (cursor 4)"


def test_typed_errors_exit_2_with_one_line(cli: Cli) -> None:
    cases = [
        (("get", "nope"), "error: not_found: no memory 'nope' in bank 'main'"),
        (("save", "x", "--type", "weird"), "error: invalid_type:"),
        (("save", "x", "--scope", "session"), "error: invalid_scope:"),
        (("bank", "create", "../evil"), "error: invalid_argument:"),
        (("recall", "x", "--mode", "psychic"), "error: invalid_argument:"),
        (("list", "--page-token", "garbage!"), "error: invalid_argument:"),
    ]
    for argv, expected in cases:
        code, out, err = cli(*argv)
        assert code == 2, argv
        assert err.startswith(expected) and err.count("\n") == 1, err
        assert out == ""


def test_unexpected_failures_exit_1(tmp_path: Path) -> None:
    class Broken:
        def tags(self, **_: Any) -> Any:
            raise RuntimeError("disk on fire")

    out, err = io.StringIO(), io.StringIO()
    code = run(["tags"], store=Broken(), out=out, err=err)
    assert code == 1
    assert err.getvalue() == "error: unexpected: RuntimeError: disk on fire\n"


@pytest.mark.parametrize("argv", [("down",), ("stop", "extractor")])
def test_down_and_stop_in_the_embedded_mode_are_refused_and_touch_no_cluster(
    cli: Cli, argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `memory --data-dir D down` stopped the running cluster, which serves another data dir
    def no_cluster() -> Any:
        raise AssertionError("the embedded mode reached for the running cluster")

    monkeypatch.setattr("shared.client.ray.join_cluster", no_cluster)
    code, out, err = cli(*argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: invalid_argument: `{argv[0]}` stops the running cluster")


def test_usage_errors_exit_2(cli: Cli) -> None:
    with pytest.raises(SystemExit) as exited:
        cli("supersede", "a")  # --by is required
    assert exited.value.code == 2


# -- (b2) readable output --------------------------------------------------------------------


def test_describe_and_capabilities_print_text_and_json_only_with_json(cli: Cli) -> None:
    code, out, _ = cli("describe")
    assert code == 0 and not out.lstrip().startswith("{")
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert rows["name"] == "memory-store" and rows["data_dir"] == str(cli.data_dir)
    assert rows["commits"] == "0 writes in 0 batches"
    code, out, _ = cli("capabilities")
    assert code == 0 and "{" not in out and '"' not in out
    assert "recall_modes            hybrid, lexical" in out
    # the settings schema as one line per setting, under the names `configure` takes
    assert "  recall_limit           integer, default 10: " in out
    assert cli.json("describe")["name"] == "memory-store"
    assert "properties" in cli.json("capabilities")["config_schema"]


def test_list_include_superseded_aligns_columns_and_says_why(cli: Cli) -> None:
    cli("save", "Standup is at 9", "--id", "standup-old")
    cli("save", "Standup is at 10", "--id", "new")
    cli("save", "Old laptop is a ThinkPad", "--id", "laptop", "--pin")
    cli("unpin", "laptop")
    cli("delete", "laptop")
    cli("save", "The user likes tea", "--id", "tea", "--pin")
    cli("supersede", "standup-old", "--by", "new")
    code, out, _ = cli("list", "--include-superseded")
    rows = out.splitlines()[:-1]
    assert code == 0 and len(rows) == 4 and "[retired]" not in out
    by_id = {row.split()[0]: row for row in rows}
    assert "  superseded  " in by_id["standup-old"] and "  deleted  " in by_id["laptop"]
    assert "  pinned  " in by_id["tea"]
    texts = ("Standup is at 9", "Standup is at 10", "Old laptop is a ThinkPad", "The user likes")
    # every column starts at one offset in every row: the date, and the text after the flags
    assert len({re.search(DATE, row).start() for row in rows if re.search(DATE, row)}) == 1, out
    assert len({row.index(next(t for t in texts if t in row)) for row in rows}) == 1, out


DATE = r"\d{4}-\d\d-\d\d"


def test_a_mistyped_verb_gets_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, hint in (
        (["recal", "x"], "did you mean recall?"),
        (["bank", "lsit"], "did you mean list?"),
    ):
        with pytest.raises(SystemExit) as exited:
            run(argv)
        assert exited.value.code == 2
        assert hint in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["zzzzzz"])
    assert "did you mean" not in capsys.readouterr().err  # nothing close: argparse's own list


def test_save_scope_project_defaults_to_cwd(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    saved = cli.json("save", "project fact", "--scope", "project", "--type", "project")
    assert saved["memory"]["project"] == str(tmp_path.resolve())


def test_recall_sees_the_project_memories_of_the_cwd_it_saved_them_from(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a project memory saved from its folder
    project, elsewhere = tmp_path / "ship-it", tmp_path / "other"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(project)
    cli("save", "The ship-it repo deploys with make ship", "--scope", "project")
    # When it is recalled from the same folder, then it is found (it was not: recall asked
    # for no project, so every project memory was invisible to it)
    found = cli.json("recall", "how does it deploy")["memories"]
    assert [m["memory"]["text"] for m in found] == ["The ship-it repo deploys with make ship"]
    # and from another folder it is not, unless that folder is named
    monkeypatch.chdir(elsewhere)
    assert cli.json("recall", "how does it deploy")["memories"] == []
    named = cli.json("recall", "how does it deploy", "--project", str(project))["memories"]
    assert len(named) == 1


def test_a_relative_project_is_the_callers_folder_not_the_stores(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the store refuses a relative project (it would take it in its own folder): the CLI
    # resolves it where it runs, as the shell that typed it would
    (tmp_path / "app").mkdir()
    monkeypatch.chdir(tmp_path)
    saved = cli.json("save", "The app deploys with make ship", "--scope", "project",
                     "--project", "app")  # fmt: skip
    assert saved["memory"]["project"] == str(tmp_path.resolve() / "app")
    monkeypatch.chdir(tmp_path / "app")
    assert len(cli.json("recall", "how does it deploy", "--project", ".")["memories"]) == 1


def test_status_finds_the_gateway_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.client.workers import WorkerSpec

    # Given a running store on a data dir whose gateway is recorded there, as `up` leaves it
    store = MemoryStore(tmp_path / "data")
    gateway_file.write(store.root, "127.0.0.1:50999", None)  # this process: a live pid
    monkeypatch.setattr("shared.client.ray.join_cluster", lambda: {"dashboard_url": None})
    spec = WorkerSpec(name="store", actor_name="memory-store", start=lambda env: None)
    monkeypatch.setattr("shared.cli.discover", lambda: [spec])
    lifecycle = importlib.import_module("shared.client.lifecycle")  # shared.cli loads it lazily
    monkeypatch.setattr(lifecycle, "worker_answers", lambda name, ns: True)
    monkeypatch.setattr(lifecycle, "dashboard_answers", lambda url: False)
    monkeypatch.setattr(lifecycle, "store_shards", lambda timeout=5.0: [])
    # When `memory status` runs in another folder (no ./data/memory there)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMORY_DATA_DIR", raising=False)
    monkeypatch.delenv("MEMORY_EMBEDDED", raising=False)
    out, err = io.StringIO(), io.StringIO()
    try:
        code = run(["--json", "status"], store=store, out=out, err=err)
    finally:
        store.close()
    # Then it names the gateway the store's data dir records, not "not running"
    assert code == 0, err.getvalue()
    assert json.loads(out.getvalue())["gateway"] == "127.0.0.1:50999"


# -- through the installed entry point -------------------------------------------------------


def test_entry_point_embedded_smoke(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    env.update(MEMORY_EMBEDDED="1", MEMORY_DATA_DIR=str(tmp_path / "data"))
    saved = subprocess.run(
        [MEMORY, "save", "Entry point fact", "--tag", "smoke"], env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (saved.returncode, saved.stderr) == (0, "")
    recalled = subprocess.run(
        [MEMORY, "--json", "recall", "entry point"], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert recalled.returncode == 0
    assert json.loads(recalled.stdout)["memories"][0]["memory"]["id"] == "entry-point-fact"


def test_no_running_store_prints_the_hint(tmp_path: Path) -> None:
    done = subprocess.run(
        [MEMORY, "recall", "anything"], env=isolated_env(tmp_path), capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: source_unavailable: no memory store is running; "
        "start it with `memory up` or `make run`"
    ]


def test_up_moves_busy_default_ports_aside() -> None:
    from shared.cli.cluster import HeadOptions, with_free_ports

    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        busy = held.getsockname()[1]
        opts, notes = with_free_ports(HeadOptions(), defaults={"dashboard_port": busy})
        assert opts.dashboard_port not in (None, busy)
        assert notes == [f"port {busy} is busy: dashboard on {opts.dashboard_port}"]
    # a free default is left to Ray, and so is a free explicit port
    assert with_free_ports(HeadOptions(), defaults={"dashboard_port": busy}) == (HeadOptions(), [])
    assert with_free_ports(HeadOptions(dashboard_port=busy), defaults={"dashboard_port": busy}) == (
        HeadOptions(dashboard_port=busy),
        [],
    )


@pytest.mark.parametrize("field", ["dashboard_port", "port", "client_port", "agent_port"])
def test_up_refuses_a_taken_port_it_was_asked_for(field: str) -> None:
    # Given a port held by another process, asked for explicitly (`up --dashboard-port P`)
    from shared.cli.cluster import HeadOptions, PortTakenError, with_free_ports

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        # When `up` checks the ports before starting a head
        with pytest.raises(PortTakenError) as refused:
            with_free_ports(HeadOptions(**{field: busy}))
    # Then it refuses with a typed error that names the port and the flag
    assert refused.value.port == busy and refused.value.category == "invalid_argument"
    assert f"port {busy}" in refused.value.message
    assert ("--" + field.replace("_", "-")) in refused.value.message


def test_up_reports_why_the_dashboard_it_started_did_not(tmp_path: Path) -> None:
    # Given a head `up` started whose dashboard lost the race for its port (ray start exits
    # 0; its output holds the reason)
    import shared.cli as app
    from shared.client import lifecycle

    launch = lifecycle.Launch(tmp_path)
    launch.log = tmp_path / "memory-up-1.log"
    launch.log.write_text(
        "2026-12-06 20:52:43,936\tINFO usage_lib.py:448 -- Usage stats collection is disabled.\n"
        "2026-12-06 20:52:44,081\tERROR services.py:1500 -- Failed to bind to 127.0.0.1:8265 "
        "because it's already occupied. You can use `ray start --dashboard-port ...`\n"
        "2026-12-06 20:52:46,357\tSUCC scripts.py:1085 -- \x1b[32mRay runtime started.\x1b[39m\n"
    )
    info: dict[str, object] = {"cluster": "started", "dashboard_url": None}
    # When `up` prints the dashboard line
    line = app._no_dashboard(launch, info)
    # Then it says why, in Ray's words (the record's prefix dropped), also under --json
    why = "Failed to bind to 127.0.0.1:8265 because it's already occupied."
    assert line.startswith(f"not running ({why}")
    assert str(info["dashboard_error"]).startswith(why)
    # and a joined cluster's missing dashboard is not this `up`'s to explain
    assert app._no_dashboard(launch, {"cluster": "joined"}) == "not running"


# -- (c) a real cluster: up, status, save, recall, watch, down --------------------------------


LIST_WORKERS = (
    "import json, os; from shared.client.ray import join_cluster; "
    "from shared.client import lifecycle; url = join_cluster()['dashboard_url']; "
    "print(json.dumps([os.getpid(), lifecycle.ray_worker_pids(url)]))"
)


@pytest.mark.slow
@pytest.mark.timeout(300)  # ~25 s idle; a busy shared box has taken 70 s
def test_up_status_save_recall_down_on_a_real_cluster(own_cluster: OwnCluster) -> None:
    env, memory = own_cluster.env, own_cluster.memory
    grpc_port = free_ports(1)[0]
    args = [*own_cluster.up_args(), "--grpc-port", str(grpc_port)]
    dash = args[args.index("--dashboard-port") + 1]
    up = memory("up", "store", *args)
    assert up.returncode == 0, up.stderr
    assert "ray cluster: started" in up.stdout and "started store (memory-store)" in up.stdout
    # the gateway too (--grpc-port implies it), recorded where the CLI finds it
    assert "started grpc (memory-grpc)" in up.stdout
    assert f"gateway:   127.0.0.1:{grpc_port}" in up.stdout
    assert f"dashboard: http://127.0.0.1:{dash}" in up.stdout
    assert f"data dir:  {env['MEMORY_DATA_DIR']}" in up.stdout
    # token auth stays on: up made a token in the (temporary) HOME
    assert (Path(env["HOME"]) / ".ray" / "auth_token").exists()
    # and the gateway asks for the user's admin token, made private in the state folder; up
    # says where it is, never what it is, and the record names the file, not the token
    token_file = Path(env["HOME"]) / ".local" / "state" / "agent-memory" / "token"
    token = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert f"token:     in {token_file}" in up.stdout
    assert token not in up.stdout + up.stderr
    assert token not in gateway_file.path(env["MEMORY_DATA_DIR"]).read_text()
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:  # a bare client: refused
        bare = channel.unary_unary("/memory.store.v1.StoreService/Call")
        with pytest.raises(grpc.RpcError) as refused:
            bare(b"", timeout=30)
    assert "unauthenticated" in (refused.value.details() or "")

    # and pointed to in the user's state folder: a command in any folder finds it (a coding
    # agent's hooks run in the user's project, where no ./data/memory records it)
    pointer = Path(env["HOME"]) / ".local" / "state" / "agent-memory" / "gateway.json"
    assert json.loads(pointer.read_text()) == {"data_dir": env["MEMORY_DATA_DIR"]}
    elsewhere = own_cluster.tmp / "project"
    elsewhere.mkdir()
    anywhere = {k: v for k, v in env.items() if k != "MEMORY_DATA_DIR"}
    said = (
        "import sys; from shared.cli import main; code = main(); "
        "print('ray' in sys.modules, file=sys.stderr); sys.exit(code)"
    )
    tags_there = subprocess.run(
        [sys.executable, "-c", said, "tags"], env={**anywhere, "PYTHONPATH": os.getcwd()},
        cwd=elsewhere, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert tags_there.returncode == 0 and tags_there.stderr == "False\n", tags_there.stderr
    # status and metrics too: the gateway answers what they need of the cluster
    for verb in ("status", "metrics"):
        there = subprocess.run(
            [sys.executable, "-c", said, verb], env={**anywhere, "PYTHONPATH": os.getcwd()},
            cwd=elsewhere, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert there.returncode == 0 and there.stderr == "False\n", there.stderr
        assert verb == "metrics" or f"dashboard: http://127.0.0.1:{dash}" in there.stdout

    assert memory("save", "The cluster test ran", "--tag", "slow").returncode == 0
    recall = memory("--json", "recall", "cluster test")
    assert json.loads(recall.stdout)["memories"][0]["memory"]["id"] == "cluster-test-ran"
    status = memory("status")
    assert "store         up" in status.stdout and "bank main" in status.stdout
    assert f"dashboard: http://127.0.0.1:{dash}" in status.stdout, status.stdout
    assert f"gateway:   127.0.0.1:{grpc_port}" in status.stdout
    # the store's metrics, read where Ray exports them (some seconds after they are recorded)
    deadline = time.monotonic() + 90
    while "method=save  1" not in (metrics := memory("metrics")).stdout:
        assert time.monotonic() < deadline, metrics.stdout + metrics.stderr
        time.sleep(2)
    assert "live_memories      bank=main  1" in metrics.stdout
    watch = memory("watch", "--once")
    assert "item-changed created [main] cluster-test-ran" in watch.stdout

    again = memory("up", "store")  # joins the running cluster; the actor is reused
    assert "ray cluster: joined" in again.stdout
    assert "already running: store (memory-store)" in again.stdout

    # Ray's own list of the node's workers, which `down` adds to the session's: no driver in it
    listed = subprocess.run(
        [sys.executable, "-c", LIST_WORKERS], env={**env, "PYTHONPATH": os.getcwd()},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    driver, workers = json.loads(listed.stdout.strip().splitlines()[-1])
    assert own_cluster.pid_of("ray::StoreActor") in workers and driver not in workers

    # a second store shard joins the running cluster; `stop store` stops every shard
    grown = memory("up", "store", "--store-shards", "2")
    assert grown.returncode == 0, grown.stderr
    assert "started store (memory-store-1); already running: store (memory-store)" in grown.stdout
    # status lists both shards, their health and their banks (through the gateway)
    shards = json.loads(memory("--json", "status").stdout)["shards"]
    assert [(s["actor"], s["up"]) for s in shards] == [
        ("memory-store", True),
        ("memory-store-1", True),
    ]
    assert "main" in shards[0]["banks"]
    assert "  memory-store-1   up    banks:" in memory("status").stdout
    stop = memory("stop", "store")
    assert "stopped store (memory-store, memory-store-1)" in stop.stdout, stop.stderr
    assert "store was not running" in memory("stop", "store").stdout
    back = memory("up", "store")  # one shard again, on the same data dir: nothing was lost
    assert "started store (memory-store)" in back.stdout, back.stderr
    assert "cluster test ran" in memory("get", "cluster-test-ran").stdout

    with own_cluster.client() as client:  # connected, disconnected, still running
        cluster = set(own_cluster.pids()) - {client.pid}
        down = memory("down")
        assert down.returncode == 0, down.stderr
        assert "stopped store" in down.stdout and "ray cluster stopped" in down.stdout
        assert own_cluster.wait_gone(cluster) == set()
        assert client.poll() is None  # `down` never signals a user's process
    # the gateway's record goes with it, and the user's pointer to it (the token stays)
    assert not gateway_file.path(env["MEMORY_DATA_DIR"]).exists()
    assert not pointer.exists() and token_file.read_text().strip() == token
    gone = memory("status")
    assert gone.returncode == 2 and "no memory store is running" in gone.stderr


@pytest.mark.slow
def test_up_with_a_taken_dashboard_port_starts_nothing(own_cluster: OwnCluster) -> None:
    # Given the dashboard port asked for held by another process
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        args = own_cluster.up_args()
        args[args.index("--dashboard-port") + 1] = str(busy)
        # When `memory up` is asked for it
        up = own_cluster.memory("up", "store", *args)
    # Then it refuses, naming the port, before starting a head (it used to exit 0 with
    # `dashboard: not running`, the reason only in a log file)
    assert up.returncode != 0
    assert f"port {busy} (dashboard, --dashboard-port) is taken" in up.stderr, up.stderr
    assert "starting a local Ray cluster" not in up.stdout
    assert own_cluster.pids() == {}


def test_store_verbs_is_every_verb_the_store_adds() -> None:
    from shared.cli.store import STORE_VERBS, add_store_verbs

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_store_verbs(sub, argparse.ArgumentParser(add_help=False))
    assert set(sub.choices) == STORE_VERBS


@pytest.mark.parametrize(
    ("argv", "workers", "commands"),
    [
        (["recall", "x"], False, set()),
        (["--data-dir", "up", "save", "x"], False, set()),  # "up" is the option's value here
        (["--timeout", "3", "--json", "rule", "list"], False, set()),
        (["hook", "UserPromptSubmit"], False, {"integrations"}),  # only its own plug-in
        (["--json", "mcp"], False, {"integrations"}),
        (["up"], True, {"integrations"}),
        (["consolidate", "run"], True, {"integrations"}),
        (["--help"], True, {"integrations"}),
    ],
)
def test_a_verb_loads_only_the_packages_it_needs(
    argv: list[str], workers: bool, commands: set[str]
) -> None:
    from shared.cli import _plugins_for, _verb

    specs, plugins = _plugins_for(_verb(argv))
    assert bool(specs) is workers
    assert {c.name for c in plugins} == commands


def test_a_hook_process_loads_no_worker_package_nor_pydantic(tmp_path: Path) -> None:
    """``memory hook`` runs on every prompt of a coding agent: its process imports the
    integrations package and the gateway's client, never a worker's core or pydantic (the
    gateway answers as views), even when the hook fails (no gateway: logged, exit 0)."""
    script = (
        "import sys\n"
        "from shared.cli import main\n"
        "code = main()\n"
        "heavy = [m for m in ('pydantic', 'ray', 'store_worker', 'consolidate_worker',"
        " 'extract_worker', 'grpc_gateway') if m in sys.modules]\n"
        "sys.stderr.write(f'LOADED {heavy}\\n')\n"
        "raise SystemExit(code)\n"
    )
    from shared.client import gateway_file

    gateway_file.write(tmp_path, "127.0.0.1:1", None)  # recorded, but nothing answers there
    env = {
        **os.environ,
        "MEMORY_DATA_DIR": str(tmp_path),
        "MEMORY_HOOK_LOG": str(tmp_path / "hooks.log"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-c", script, "hook", "UserPromptSubmit"],
        input='{"session_id": "s", "cwd": "/tmp", "prompt": "hi"}',
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stderr, done.stderr
    assert "source_unavailable" in (tmp_path / "hooks.log").read_text()


METRICS_TEXT = (
    "# TYPE ray_memory_store_writes counter\n"
    'ray_memory_store_writes{method="save",WorkerId="w1"} 2\n'
    'ray_memory_store_writes{method="save",WorkerId="w2"} 1\n'
)


def test_status_and_metrics_through_a_gateway_load_no_ray(tmp_path: Path) -> None:
    """Through a recorded gateway, `memory status` and `memory metrics` ask it (it runs in
    the cluster, with Ray): their process never imports Ray nor joins the cluster."""
    from grpc_gateway.server import build_server
    from shared.client import lifecycle

    asked: list[dict[str, object]] = []

    def status(args: dict[str, object]) -> dict[str, object]:
        asked.append(args)
        workers = dict(args["workers"])  # type: ignore[call-overload]
        shards = [
            {"shard": 0, "actor": "memory-store", "up": True, "banks": ["main"]},
            {"shard": 1, "actor": "memory-store-1", "up": True, "banks": ["work"]},
        ]
        return {"dashboard_url": "", "workers": {n: True for n in workers}, "shards": shards}

    calls = {
        lifecycle.STATUS_CALL: status,
        lifecycle.METRICS_CALL: lambda args: {"text": METRICS_TEXT},
    }
    store = MemoryStore(tmp_path / "data")
    store.save("The user prefers tabs", bank="main")
    server, port = build_server(store, port=0, gateway_calls=calls)
    server.start()
    gateway_file.write(store.root, f"127.0.0.1:{port}", None)
    script = (
        "import sys\n"
        "from shared.cli import main\n"
        "code = main()\n"
        "heavy = [m for m in ('ray', 'store_worker.core', 'grpc_gateway.server')"
        " if m in sys.modules]\n"
        "sys.stderr.write(f'LOADED {heavy}\\n')\n"
        "raise SystemExit(code)\n"
    )
    env = {**isolated_env(tmp_path), "MEMORY_DATA_DIR": str(store.root)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])

    def memory(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip

    try:
        shown = memory("--json", "status")
        text = memory("status")
        metrics = memory("metrics")
    finally:
        server.stop(None)
        store.close()
    for done in (shown, text, metrics):
        assert done.returncode == 0 and "LOADED []" in done.stderr, done.stderr
    got = json.loads(shown.stdout)
    # the gateway was asked about the workers this CLI knows, by actor name
    assert asked[0]["workers"]["store"] == "memory-store"  # type: ignore[index]
    assert got["gateway"] == f"127.0.0.1:{port}" and got["workers"]["store"] is True
    assert [b["name"] for b in got["banks"]] == ["main"]
    # every store shard, its health and its banks, in --json and in the text
    assert [(s["actor"], s["up"], s["banks"]) for s in got["shards"]] == [
        ("memory-store", True, ["main"]),
        ("memory-store-1", True, ["work"]),
    ]
    assert "  memory-store     up    banks: main" in text.stdout.splitlines()
    assert "  memory-store-1   up    banks: work" in text.stdout.splitlines()
    # metrics: Ray's export read by the gateway, folded here
    assert "writes  method=save  3" in metrics.stdout, metrics.stdout


def test_status_over_ray_lists_every_store_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no gateway recorded: status reads the cluster over Ray, shards included
    lifecycle = importlib.import_module("shared.client.lifecycle")
    shards = [
        {"shard": 0, "actor": "memory-store", "up": True, "banks": ["main"]},
        {"shard": 1, "actor": "memory-store-1", "up": False, "banks": [], "error": "ActorDied"},
    ]
    report = {"dashboard_url": None, "workers": {"store": True}, "shards": shards}
    monkeypatch.setattr(lifecycle, "cluster_report", lambda workers: report)
    store = MemoryStore(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MEMORY_DATA_DIR", raising=False)
    monkeypatch.delenv("MEMORY_EMBEDDED", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    try:
        out, err = io.StringIO(), io.StringIO()
        assert run(["status"], store=store, out=out, err=err) == 0, err.getvalue()
    finally:
        store.close()
    # Then a shard that does not answer is shown down, with why
    assert "  memory-store-1   down  ActorDied" in out.getvalue().splitlines()


@pytest.mark.parametrize("argv", [["--help"], ["consolidate", "--help"], ["grpc", "--help"]])
def test_help_loads_the_worker_specs_but_no_worker_core(argv: list[str]) -> None:
    """Every worker's entry point is a light spec module (``<package>.spec``): its verbs and
    ``up`` flags are there, and the core, grpcio, numpy and Ray are imported only when a verb
    runs (``shared.client.workers.lazy``)."""
    script = (
        "import sys\n"
        "from shared.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('pydantic', 'ray', 'grpc', 'numpy', 'store_worker.core',"
        " 'extract_worker.core', 'consolidate_worker.core', 'grpc_gateway.server')"
        " if m in sys.modules]\n"
        "sys.stderr.write(f'LOADED {heavy}\\n')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "LOADED []" in done.stderr, done.stderr
    assert "usage: memory" in done.stdout or "usage: " in done.stdout, done.stdout


def test_an_embedded_recall_compiles_no_redaction_rule_and_a_save_does(tmp_path: Path) -> None:
    """A read verb on an embedded data dir never redacts: the rules' modules (~40 patterns,
    ~13 ms to compile) are not imported; a save imports them and redacts as ever."""
    script = (
        "import sys\n"
        "from shared.cli import main\n"
        "code = main()\n"
        "heavy = [m for m in ('shared.redact.context', 'shared.redact.gate',"
        " 'shared.redact.catalogue') if m in sys.modules]\n"
        "sys.stderr.write(f'LOADED {heavy}\\n')\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    data = str(tmp_path / "d")

    def memory(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, "--data-dir", data, *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    saved = memory("save", "the deploy key is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    assert saved.returncode == 0, saved.stderr
    assert "LOADED ['shared.redact.context'" in saved.stderr, saved.stderr
    found = memory("recall", "deploy key")
    assert found.returncode == 0, found.stderr
    assert "LOADED []" in found.stderr, found.stderr
    assert "[REDACTED:" in found.stdout and "ghp_a1B2" not in found.stdout


def test_up_help_still_offers_every_worker_flag() -> None:
    from shared.cli import build_parser

    up = build_parser()._subparsers._group_actions[0].choices["up"]  # type: ignore[union-attr]
    text = up.format_help()
    for flag in ("--store-shards", "--extractor-replicas", "--grpc-port", "--grpc-token-file"):
        assert flag in text


def test_a_lazy_target_is_imported_at_its_first_call_and_errors_then() -> None:
    from shared.client.workers import lazy

    join = lazy("posixpath:join")
    assert join("a", "b") == "a/b"
    assert join.__name__ == "join"
    missing = lazy("no_such_module_here:start")  # naming it costs nothing
    with pytest.raises(ModuleNotFoundError):
        missing()


def test_a_stored_control_sequence_is_shown_escaped_never_sent_to_the_terminal(
    tmp_path: Path,
) -> None:
    """A memory's text can hold what an LLM copied from untrusted tool output: the CLI shows
    escape sequences, bidi overrides and other controls as visible escapes."""
    from shared.cli import main

    data = str(tmp_path / "d")
    evil = "ok \x1b]0;PWNED\x07 title \x1b[2J cleared \x1b]52;c;ZWNobyBoaQ==\x07 \u202erev"
    assert main(["--data-dir", data, "save", evil]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--data-dir", data, "list"]) == 0
    shown = out.getvalue()
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\x1b]0;PWNED\\x07" in shown and "\\u202e" in shown


def test_counts_read_as_english() -> None:
    from shared.cli.output import bank_line, counted

    assert [counted(n, "memory") for n in (0, 1, 2)] == ["0 memories", "1 memory", "2 memories"]
    assert counted(1, "corrupt line") == "1 corrupt line" and counted(3, "bank") == "3 banks"
    line = bank_line({"name": "main", "memories": 1, "rules": 1, "pinned": 0})
    assert line.endswith("1 memory, 1 rule, 0 pinned")


def test_recall_shows_how_it_read_a_misspelt_query(tmp_path: Path) -> None:
    from store_worker.recall.synonyms import FakeSynonyms

    store = MemoryStore(tmp_path / "data", synonyms=FakeSynonyms({"tournament": []}))
    cli = Cli(tmp_path / "data", store=store)
    cli("save", "Nate won the regional video game tournament")
    code, out, _ = cli("recall", "which torunament did nate win")
    assert code == 0
    first, second = out.splitlines()[:2]
    assert first == "read as: which tournament did nate win"
    assert "nate-won-regional-video-game-tournament" in second
    assert cli.json("recall", "which torunament did nate win")["read_as"] == (
        "which tournament did nate win"
    )
    code, out, _ = cli("recall", "which tournament did nate win")  # spelt right: no line
    assert not out.startswith("read as")
    store.close()
