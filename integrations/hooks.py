"""``memory hook <event>``: coding-agent hooks, in Claude Code's shape (docs/PROTOCOLS.md).

The agent runs the hook with its JSON on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``prompt`` ...) and reads the answer from stdout:

    SessionStart       the bank's rules section        -> hookSpecificOutput.additionalContext
    UserPromptSubmit   the recalled block for prompt   -> hookSpecificOutput.additionalContext
    Stop, SessionEnd   the finished turn, read from the transcript JSONL, is handed to
                       ``turn_completed`` (the extraction outbox); nothing is printed

Both inject events go through ``pre_generate`` with ``metadata.session.memory_bank``, so the
store binds the session to its bank and ``turn_completed`` later files the turn there; over
store shards the client keeps that binding where the next hook process finds it
(``shared.client.sessions``), so the turn reaches the shard that holds the bank.

The bank (``bank_for``): ``--bank``, else ``MEMORY_HOOK_BANK``, else the project's name: the
nearest folder at or above ``cwd`` holding ``.git`` (else ``cwd`` itself), lower-cased, every
run of characters outside ``[a-z0-9_-]`` turned into ``-``, cut to 64 characters. A project
bank that does not exist yet falls back to the store's default bank (``memory bank create
<name>`` gives a project its own memory); an explicit bank must exist.

Never block or break the agent (Claude Code treats exit 2 as "block this prompt"): on any
failure the hook prints nothing, appends one line saying why to the hook log
(``MEMORY_HOOK_LOG``, else ``$XDG_STATE_HOME/agent-memory/hooks.log``, else
``~/.local/state/agent-memory/hooks.log``, created 0600 as the other state files; stderr when
that cannot be written) and exits 0.

Redaction: the store redacts a turn before its outbox touches the disk, so a turn sent to a
gateway on this machine's loopback goes as it is and the hook never loads the redactor (about a
quarter of a second of a Stop hook's time); to any other store (a remote gateway, Ray, an
embedded store) the turn is redacted here first, before it leaves this process. A hook-log line
is always redacted, the redactor imported only when a line is written.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from shared.client import gateway_file
from shared.contract import errors

if TYPE_CHECKING:  # annotations only: a hook runs at every prompt, and
    # importing pydantic would add ~0.1 s to each
    from shared.contract.api import StoreAPI
    from shared.contract.op import Message

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")
BANK_ENV = "MEMORY_HOOK_BANK"
LOG_ENV = "MEMORY_HOOK_LOG"
MAX_STDIN = 8 << 20  # a hook's JSON is small, but a prompt may carry a pasted log or file
STDIN_CHUNK = 1 << 16
MAX_LOG_LINE = 1000  # characters of one hook-log line
TRANSCRIPT_TAIL = 4 << 20  # the finished turn is at the end: read at most the last 4 MiB
_NOT_BANK = re.compile(r"[^a-z0-9_-]+")


@dataclass(frozen=True)
class HookInput:
    """The fields of the agent's hook JSON this module uses."""

    event: str
    session_id: str
    cwd: str
    prompt: str = ""
    transcript_path: str = ""

    @staticmethod
    def parse(raw: str, event: str) -> HookInput:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise errors.InvalidArgumentError(f"hook input is not JSON: {e}") from e
        if not isinstance(data, dict):
            raise errors.InvalidArgumentError("hook input must be a JSON object")
        said = data.get("hook_event_name")
        if said is not None and said != event:
            raise errors.InvalidArgumentError(f"hook input is for {said!r}, not {event!r}")
        session = data.get("session_id")
        if not isinstance(session, str) or not session.strip():
            raise errors.InvalidArgumentError("hook input has no session_id")
        return HookInput(
            event=event,
            session_id=session,
            cwd=_str(data, "cwd") or os.getcwd(),
            prompt=_str(data, "prompt"),
            transcript_path=_str(data, "transcript_path"),
        )


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


# -- the bank ----------------------------------------------------------------------------------


def project_bank(cwd: str) -> str | None:
    """The bank name the project at ``cwd`` maps to (module docstring), or None."""
    here = Path(cwd)
    root = next((p for p in (here, *here.parents) if (p / ".git").exists()), here)
    name = _NOT_BANK.sub("-", root.name.lower()).strip("-_")[:64].rstrip("-_")
    return name or None


def bank_for(
    store: StoreAPI, cwd: str, *, override: str | None, env: Mapping[str, str]
) -> str | None:
    """The bank for this session: explicit (must exist), else the project's if it exists,
    else None (the store's default bank)."""
    chosen = override or env.get(BANK_ENV) or None
    if chosen:
        return chosen
    name = project_bank(cwd)
    if name is None:
        return None
    return name if name in {b.name for b in store.bank_list().banks} else None


# -- the transcript ----------------------------------------------------------------------------


def finished_turn(path: str) -> list[Message]:
    """The last turn of a Claude Code transcript: the newest prompt the user typed and every
    assistant text after it (tool calls and results, thinking and meta lines left out)."""
    entries = list(_entries(path))
    start = None
    for i, entry in enumerate(entries):
        if entry[0] == "user":
            start = i
    if start is None:
        return []
    turn: list[Message] = []
    for role, text, stamp in entries[start:]:
        if turn and turn[-1]["role"] == role:  # an answer streamed as several lines
            turn[-1]["content"] += "\n\n" + text
            continue
        msg: Message = {"role": role, "content": text}
        if stamp:
            msg["timestamp"] = stamp
        turn.append(msg)
    return turn


def _entries(path: str) -> Iterator[tuple[str, str, str]]:
    """(role, text, timestamp) of each transcript line that carries prose."""
    for line in _tail_lines(path):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line being written as we read
        if not isinstance(entry, dict) or entry.get("isMeta") or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        if entry.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        role = message.get("role")
        text = _prose(message.get("content"))
        if role in ("user", "assistant") and text:
            yield role, text, _str(entry, "timestamp")


def _prose(content: object) -> str:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(texts).strip()


def _tail_lines(path: str) -> list[str]:
    """The transcript's last ``TRANSCRIPT_TAIL`` bytes as lines. Only a regular file: a FIFO
    (opened without blocking, refused before any read) blocked the hook for good, and a
    device such as ``/dev/zero`` (size 0, endless) was read until memory ran out."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        raise errors.SourceUnavailableError(f"cannot read the transcript {path}: {e}") from e
    try:
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise errors.SourceUnavailableError(
                    f"cannot read the transcript {path}: not a regular file"
                )
            size = st.st_size
            f.seek(max(0, size - TRANSCRIPT_TAIL))
            data = f.read(TRANSCRIPT_TAIL)  # bounded even if the file grows as it is read
    except OSError as e:
        raise errors.SourceUnavailableError(f"cannot read the transcript {path}: {e}") from e
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > TRANSCRIPT_TAIL else lines  # the first may be cut


def loopback(store: object) -> bool:
    """Whether ``store`` is a gateway client for an address on this machine's loopback
    (``127.0.0.0/8``, ``::1``, ``localhost``): the turn reaches the store without crossing a
    network, and the store redacts it before its outbox touches the disk."""
    client = sys.modules.get("shared.client.grpc")  # not loaded: no gateway client
    if client is None or type(store) is not client.GrpcStoreClient:  # nor a subclass
        return False
    address = str(getattr(store, "address", ""))
    host = address.rsplit(":", 1)[0] if ":" in address else address
    host = host.removeprefix("[").removesuffix("]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it could resolve anywhere
        return False


def redacted(turn: list[Message]) -> list[Message]:
    """The turn with every recognised secret replaced before it leaves this process."""
    from shared.redact import redact

    return [{**m, "content": redact(str(m["content"])).text} for m in turn]


# -- the events --------------------------------------------------------------------------------


class HookRunner:
    """One hook event over ``StoreAPI``: returns what to print (or None)."""

    def __init__(self, store: StoreAPI, *, bank: str | None, redact_turns: bool = True) -> None:
        self.store = store
        self.bank = bank
        self.redact_turns = redact_turns  # False: the store on loopback redacts it (``loopback``)
        self.unserved = ""  # why a turn got no memory at all (the store's notes), or ""

    def run(self, hook: HookInput) -> str | None:
        handlers: dict[str, Callable[[HookInput], str | None]] = {
            "SessionStart": self.session_start,
            "UserPromptSubmit": self.user_prompt,
            "Stop": self.turn_done,
            "SessionEnd": self.turn_done,
        }
        return handlers[hook.event](hook)

    def _meta(self, hook: HookInput) -> dict[str, Any]:
        return {"session": {"memory_bank": self.bank}, "cwd": hook.cwd}

    def _served(self, got: Any) -> Any:
        """``got``, noting why when the store served no bank at all (``--bank`` naming a bank
        that does not exist, an invalid name): the hook printed nothing and logged nothing,
        and memory was off without a word."""
        if getattr(got, "bank", "") is None:  # a view without the field: served
            self.unserved = "; ".join(getattr(got, "notes", ()) or ()) or "no bank served"
        return got

    def session_start(self, hook: HookInput) -> str | None:
        got = self._served(
            self.store.pre_generate(hook.session_id, messages=[], metadata=self._meta(hook))
        )
        return _context(hook.event, got.system_prompt or "")

    def user_prompt(self, hook: HookInput) -> str | None:
        if not hook.prompt.strip():
            return None
        got = self._served(
            self.store.pre_generate(
                hook.session_id,
                messages=[{"role": "user", "content": hook.prompt}],
                metadata=self._meta(hook),
            )
        )
        return _context(hook.event, "\n\n".join(m["content"] for m in got.append_messages))

    def turn_done(self, hook: HookInput) -> str | None:
        if not hook.transcript_path:
            raise errors.InvalidArgumentError(f"{hook.event} input has no transcript_path")
        turn = finished_turn(hook.transcript_path)
        if turn and self.redact_turns:
            turn = redacted(turn)
        if turn:
            self.store.turn_completed(hook.session_id, messages=turn)
        return None


def _context(event: str, text: str) -> str | None:
    if not text.strip():
        return None
    out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    # ASCII (\u escapes): the answer survives any stdout encoding (PYTHONIOENCODING=ascii, a
    # non-UTF-8 locale), where a memory's "café" failed the write and the whole answer
    return json.dumps(out)


# -- the shell: never block the agent ----------------------------------------------------------


@dataclass(frozen=True)
class HookOptions:
    event: str
    bank: str | None = None
    data_dir: str | None = None
    timeout: float = 10.0


def run_hook(
    opts: HookOptions,
    *,
    stdin: TextIO,
    stdout: TextIO,
    env: Mapping[str, str],
    open_store: Callable[[str | None, float], StoreAPI],
    close_store: Callable[[StoreAPI], None],
) -> int:
    """Run one event; always 0. Prints only a complete answer, and only on success."""
    started = time.perf_counter()
    store: StoreAPI | None = None
    try:
        if opts.event not in EVENTS:
            raise errors.InvalidArgumentError(f"unknown hook event {opts.event!r}; use {EVENTS}")
        hook = HookInput.parse(read_input(stdin), opts.event)
        with contextlib.redirect_stdout(sys.stderr):  # a library's print never reaches the agent
            store = open_store(opts.data_dir, opts.timeout)
            bank = bank_for(store, hook.cwd, override=opts.bank, env=env)
            runner = HookRunner(store, bank=bank, redact_turns=not loopback(store))
            answer = runner.run(hook)
        if runner.unserved:
            _log(env, f"{opts.event}: no memory: {runner.unserved} ({_ms(started)} ms)")
    except Exception as e:  # every failure: log it, say nothing to the model, exit 0
        _log(env, f"{opts.event}: failed: {_why(e)} ({_ms(started)} ms)")
        return 0
    finally:
        if store is not None:
            with contextlib.suppress(Exception):
                close_store(store)
    if answer:
        try:
            stdout.write(answer + "\n")
            stdout.flush()
        except (OSError, ValueError) as e:  # the agent closed the pipe: nothing to tell it
            _log(env, f"{opts.event}: answer not delivered: {type(e).__name__}: {e}")
    return 0


def read_input(stdin: TextIO) -> str:
    """The hook's JSON: all of stdin, read to its end even past ``MAX_STDIN`` (then refused):
    a hook that stopped reading at the cap failed the agent's write into the pipe (EPIPE) and
    logged the cut-off JSON as "not JSON". The agent's pipe is read as bytes and decoded
    leniently: a stray non-UTF-8 byte in a prompt costs that byte, not the hook."""
    source: Any = getattr(stdin, "buffer", stdin)
    raw = source.read(MAX_STDIN + 1)
    if len(raw) > MAX_STDIN:
        total = len(raw)
        while chunk := source.read(STDIN_CHUNK):  # drain: the agent's write completes
            total += len(chunk)
        raise errors.InvalidArgumentError(f"hook input is {total} bytes; the limit is {MAX_STDIN}")
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)


def _why(e: Exception) -> str:
    if isinstance(e, errors.MemoryServiceError):
        return f"{e.category}: {e.message}"
    return f"unexpected: {type(e).__name__}: {e}"


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def log_failure(env: Mapping[str, str], event: str, why: str) -> None:
    """The hook log's line for a failure of ``event`` found before it ran (a usage error)."""
    _log(env, f"{event}: failed: {why}")


def log_path(env: Mapping[str, str]) -> Path:
    if env.get(LOG_ENV):
        return Path(env[LOG_ENV])
    return gateway_file.state_dir(env) / "hooks.log"


def _log(env: Mapping[str, str], line: str) -> None:
    """One line in the hook log: redacted (a failure's message may quote the agent's input:
    a path, a field's value) and cut to ``MAX_LOG_LINE`` characters, newlines folded."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = " ".join(line[: MAX_LOG_LINE * 4].split())
    try:
        from shared.redact import redact

        line = redact(line).text
    except Exception:  # the redactor itself failing: keep no text that could hold a secret
        line = line.split(":", 1)[0] + ": (message withheld: it could not be redacted)"
    if len(line) > MAX_LOG_LINE:
        line = line[: MAX_LOG_LINE - 1] + "…"
    try:
        path = log_path(env)
        path.parent.mkdir(parents=True, exist_ok=True)
        # 0600 as the other state files: a line may quote a path or a prompt's words
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "a", encoding="utf-8") as f:
            f.write(f"{stamp} {line}\n")
    except OSError:
        sys.stderr.write(f"memory hook: {line}\n")


# -- install -----------------------------------------------------------------------------------


def claude_code_settings(prefix: str = "memory", suffix: str = "") -> dict[str, Any]:
    """The ``hooks`` block of Claude Code's settings.json: ``<prefix> hook <Event><suffix>``."""
    return {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": f"{prefix} hook {event}{suffix}"}]}]
            for event in EVENTS
        }
    }


def merge_settings(
    current: dict[str, Any], prefix: str = "memory", suffix: str = ""
) -> dict[str, Any]:
    """``current`` with our hooks added once per event (other hooks and keys kept)."""
    merged = dict(current)
    hooks = dict(merged.get("hooks") or {})
    if not isinstance(current.get("hooks", {}), dict):
        raise errors.InvalidArgumentError("settings.json: `hooks` is not an object")
    for event, groups in claude_code_settings(prefix, suffix)["hooks"].items():
        existing = list(hooks.get(event) or [])
        ours = groups[0]["hooks"][0]["command"]
        present = any(
            isinstance(g, dict)
            and any(isinstance(h, dict) and h.get("command") == ours for h in g.get("hooks", []))
            for g in existing
        )
        hooks[event] = existing if present else [*existing, *groups]
    merged["hooks"] = hooks
    return merged


def write_settings(path: Path, prefix: str = "memory", suffix: str = "") -> dict[str, Any]:
    """Merge our hooks into the settings file at ``path`` (created if missing). A symlink
    (settings kept in a dotfiles repository) is written through, not replaced by a file,
    and the file keeps its mode."""
    path = path.resolve() if path.is_symlink() else path
    try:
        current = json.loads(path.read_text("utf-8")) if path.exists() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.InvalidArgumentError(f"cannot read {path}: {e}") from e
    if not isinstance(current, dict):
        raise errors.InvalidArgumentError(f"{path} does not hold a JSON object")
    merged = merge_settings(current, prefix, suffix)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(merged, indent=2) + "\n", "utf-8")
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except OSError as e:
        raise errors.storage_error(f"cannot write {path}", e) from e
    return merged
