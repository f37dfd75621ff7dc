"""``memory chat``: a small terminal chat on any litellm model, wired to memory.

It is the example for integrators: a harness calls the store twice per turn —

    inj = store.pre_generate(session_id, turn_id, 0, messages, metadata)
    system = base_prompt + "\\n\\n" + inj.system_prompt        # frozen per session
    messages += inj.append_messages                             # kept in the transcript
    reply = llm(system, messages)
    store.turn_completed(session_id, turn_id, turn_messages, status)

— and memory captures in the background: the ``memory-extractor`` actor drains the outbox. In
the embedded mode (``--data-dir``), the chat runs an ``Extractor`` in-process after each turn
when an extraction model is configured. ``--show-memory`` prints what was injected.

``--api-base URL`` and ``--api-key-env VAR`` (the NAME of the variable holding the key) point it
at any OpenAI-compatible server (llama.cpp's server, Ollama, vLLM); ``chat_llm`` builds that.
The model is called through ``shared.llm`` (the extractor's adapter and error policy): a failed
call is an ``LLMError``, which the loop answers with "no reply" and goes on, while a store
failure stops it.

It lives with the extractor (it runs one in the embedded mode), not in ``shared``, which
imports no worker package (so a client or the gateway never loads a worker's code). The store
is a ``shared.contract.api.StoreAPI``: the running store as the CLI reaches it (the gateway, else
Ray), or the embedded store opened through the store worker's entry point.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from ulid import ULID

from shared.contract.clock import Clock, SystemClock
from shared.contract.errors import MemoryServiceError, reason

if TYPE_CHECKING:  # memory --help builds this module's parser: no pydantic for that
    from shared.contract.api import StoreAPI
    from shared.llm.base import LLM

BASE_SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."
Complete = Callable[[list[dict[str, str]]], str]


@dataclass
class TurnRecord:
    user: str
    reply: str
    status: str
    injected_system: str | None
    appended: list[dict[str, str]] = field(default_factory=list)


class ChatSession:
    """One conversation: the transcript, and the two store calls per turn."""

    def __init__(
        self,
        store: StoreAPI,
        complete: Complete,
        *,
        session_id: str | None = None,
        bank: str | None = None,
        system_prompt: str = BASE_SYSTEM_PROMPT,
        clock: Clock | None = None,
        after_turn: Callable[[], Any] | None = None,
    ) -> None:
        self.store = store
        self.complete = complete
        self.session_id = session_id or f"chat-{ULID()}"
        self.bank = bank
        self.system_prompt = system_prompt
        self.clock = clock or SystemClock()
        self.after_turn = after_turn
        self.messages: list[dict[str, Any]] = []
        self.frozen_section: str | None = None

    def send(self, text: str) -> TurnRecord:
        turn_id = str(ULID())
        start = len(self.messages)
        self.messages.append({"role": "user", "content": text, "timestamp": self.clock.now_ms()})
        metadata = {"memory_bank": self.bank} if self.bank else {}
        inj = self.store.pre_generate(self.session_id, turn_id, 0, list(self.messages), metadata)
        appended = [dict(m) for m in inj.append_messages]
        self.messages.extend(appended)  # persisted in place: later windows carry them
        if self.frozen_section is None:
            self.frozen_section = inj.system_prompt
        system = self.system_prompt
        if inj.system_prompt:
            system += "\n\n" + inj.system_prompt
        prompt = [{"role": "system", "content": system}]
        prompt += [{"role": m["role"], "content": m["content"]} for m in self.messages]
        status = "completed"
        try:
            reply = self.complete(prompt)
        except Exception:
            status = "failed"  # a failed turn is extracted too: what the user said still counts
            self.store.turn_completed(self.session_id, turn_id, self.messages[start:], status)
            raise
        answer = {"role": "assistant", "content": reply, "timestamp": self.clock.now_ms()}
        self.messages.append(answer)
        self.store.turn_completed(self.session_id, turn_id, self.messages[start:], status)
        if self.after_turn is not None:
            self.after_turn()
        return TurnRecord(text, reply, status, inj.system_prompt, appended)


def model_complete(llm: LLM, model: str) -> Complete:
    """A ``Complete`` over ``llm``: the provider's own temperature, no reply cap, no timeout
    of ours (a person is waiting and can interrupt)."""

    def complete(messages: list[dict[str, str]]) -> str:
        return llm.complete(messages, model=model, temperature=None).text

    return complete


def run_chat(
    session: ChatSession,
    lines: Iterable[str],
    out: TextIO,
    *,
    show_memory: bool = False,
    prompt: str = "you> ",
) -> int:
    """The read-reply loop; ``/quit`` or end of input stops it. A turn whose model call
    fails (no credentials, a provider outage) says why and the loop goes on. Returns turns
    completed."""
    from shared.llm import LLMError  # here, not at the top: ``memory --help`` imports this module

    turns = 0
    for raw in lines:
        text = raw.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            break
        try:
            record = session.send(text)
        except LLMError as e:  # the model call failed (the turn is queued as failed): go on
            _no_reply(out, e)
            continue
        except MemoryServiceError:
            raise  # the store failed: nothing more can be remembered, stop
        except Exception as e:  # a ``Complete`` outside ``shared.llm`` failed: the same
            _no_reply(out, e)
            continue
        turns += 1
        if show_memory:
            _show(record, out, first=turns == 1)
        out.write(f"assistant> {record.reply}\n")
        out.flush()
    return turns


def _no_reply(out: TextIO, e: Exception) -> None:
    out.write(f"assistant> (no reply: the model call failed: {_why(e)})\n")
    out.flush()


def _why(e: Exception) -> str:
    """A model error in one line a user reads: its type and first line (``reason``), cut, and
    redacted (a provider's error may quote the key it was given)."""
    from shared.redact import redact_text

    return redact_text(f"{type(e).__name__}: {reason(e)[:300]}")


def _show(record: TurnRecord, out: TextIO, *, first: bool) -> None:
    if first and record.injected_system:
        out.write("[memory] system prompt section:\n")
        out.write("".join(f"  | {line}\n" for line in record.injected_system.splitlines()))
    for msg in record.appended:
        out.write("[memory] appended message:\n")
        out.write("".join(f"  | {line}\n" for line in msg["content"].splitlines()))


# -- the CLI verbs (registered through the extractor's WorkerSpec.add_cli) ----------------------


def add_cli(sub: Any) -> None:
    p = sub.add_parser(
        "chat",
        help="Chat in the terminal on any litellm model, with memory injected and captured.",
        description="A terminal chat that calls pre_generate and turn_completed per turn.",
    )
    p.add_argument("--model", default=os.environ.get("MEMORY_CHAT_MODEL"), help="litellm model")
    p.add_argument(
        "--api-base",
        metavar="URL",
        default=os.environ.get("MEMORY_CHAT_API_BASE"),
        help="send the chat's model calls to this OpenAI-compatible server (llama.cpp, Ollama, "
        "vLLM), e.g. http://127.0.0.1:8080/v1 (default MEMORY_CHAT_API_BASE)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=os.environ.get("MEMORY_CHAT_API_KEY_ENV"),
        help="NAME of the environment variable holding the chat model's API key, e.g. "
        "OPENAI_API_KEY (default MEMORY_CHAT_API_KEY_ENV, else litellm's own provider variable)",
    )
    p.add_argument("--bank", help="memory bank for this session (default: the default bank)")
    p.add_argument("--session", help="session id to resume (default: a new one)")
    p.add_argument("--show-memory", action="store_true", help="print what memory injected")
    p.add_argument(
        "--extraction-model",
        help="embedded mode: run extraction in-process with this litellm model "
        "(default MEMORY_EXTRACTION_MODEL)",
    )
    _common(p)
    p.set_defaults(handler=_chat_cmd)
    p = sub.add_parser(
        "outbox",
        help="Show the extraction outbox: queued, leased and dead-lettered turns.",
        description="The durable extraction outbox (dead letters first).",
    )
    p.add_argument("--requeue", metavar="JOB_ID", help="put a dead letter back in the queue")
    p.add_argument("--drop", metavar="JOB_ID", help="delete a dead letter for good")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="with --requeue: drop the recorded model reply, so the model is asked again",
    )
    p.add_argument("--limit", type=int, default=50, help="jobs to list (default 50)")
    _common(p)
    p.set_defaults(handler=_outbox_cmd)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    p.add_argument("--data-dir", default=argparse.SUPPRESS, help="embedded mode: this data dir")


def _open_store(args: argparse.Namespace) -> StoreAPI:
    if getattr(args, "data_dir", None):
        from shared.client import connect

        return connect(f"file:{args.data_dir}")
    # as every store verb reaches it: the gateway when recorded, else Ray (a Ray driver made
    # `memory outbox` take ~1.5 s where the gateway answers in ~0.1 s)
    from shared.client import connect

    return connect(timeout=getattr(args, "timeout", 120.0))


def _embedded_extractor(args: argparse.Namespace, store: StoreAPI) -> Callable[[], Any] | None:
    model = args.extraction_model or os.environ.get("MEMORY_EXTRACTION_MODEL")
    if not getattr(args, "data_dir", None) or not model:
        return None
    from extract_worker.core import Extractor
    from extract_worker.settings import ExtractorSettings

    settings = ExtractorSettings.from_env(dict(os.environ), extraction_model=model)
    extractor = Extractor(store, settings.llm(), settings)
    extractor.publish_status()
    return extractor.drain


def chat_llm(args: argparse.Namespace) -> LLM:
    """The backend ``memory chat`` calls: ``--api-base``, and the key the variable
    ``--api-key-env`` names (litellm's own provider variable when none is named)."""
    from shared.llm import create_llm
    from shared.llm.endpoint import key_from_variable

    name = getattr(args, "api_key_env", None)
    key = key_from_variable(name) if name else None
    return create_llm(api_base=getattr(args, "api_base", None) or None, api_key=key)


def _chat_cmd(args: argparse.Namespace) -> int:
    from shared.contract.errors import InvalidArgumentError

    if not args.model:
        raise InvalidArgumentError("no chat model: pass --model (any litellm model name)")
    llm = chat_llm(args)  # before the store opens: a missing key variable stops here
    store = _open_store(args)
    try:
        session = ChatSession(
            store,
            model_complete(llm, args.model),
            session_id=args.session,
            bank=args.bank,
            after_turn=_embedded_extractor(args, store),
        )
        sys.stdout.write(f"session {session.session_id} — /quit to leave\n")
        run_chat(session, _stdin_lines(), sys.stdout, show_memory=args.show_memory)
    finally:
        _close_store(store)
    return 0


def _close_store(store: StoreAPI) -> None:
    """An embedded store holds its data dir's lock (store_worker/storage/lock.py) until closed; a
    gateway client holds a channel."""
    store.close()


def _stdin_lines() -> Iterable[str]:
    while True:
        try:
            sys.stdout.write("you> ")
            sys.stdout.flush()
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            return
        if not line:
            return
        yield line


def _outbox_cmd(args: argparse.Namespace, out: TextIO | None = None) -> int:
    store = _open_store(args)
    try:
        return _outbox_show(args, store, out or sys.stdout)
    finally:
        _close_store(store)


def _outbox_show(args: argparse.Namespace, store: Any, out: TextIO) -> int:
    if args.requeue:
        result = store.outbox_requeue(args.requeue, fresh=args.fresh)
        out.write(f"requeued {result.job_id}\n")
        return 0
    if getattr(args, "drop", None):
        dropped = store.outbox_drop(args.drop)
        out.write(f"dropped {dropped.job_id}\n")
        return 0
    listing = store.outbox_list(limit=args.limit)
    if getattr(args, "json", False):
        out.write(json.dumps(listing.model_dump(mode="json"), indent=2) + "\n")
        return 0
    out.write(f"queued {listing.queued}, leased {listing.leased}, dead {listing.dead}\n")
    for job in listing.jobs:
        error = f"  last error: {job.last_error}" if job.last_error else ""
        out.write(
            f"{job.state:<7} {job.job_id}  session {job.session_id}  bank {job.bank or '-'}  "
            f"{job.messages} msgs  {job.attempts} attempts{error}\n"
        )
    return 0
