"""Rules: always-injected markdown files under ``<bank>/rules/`` (``rule_set``).

Writes are atomic (temp + rename); empty content removes the rule; content is redacted like
every other write path. ``learned`` is the auto-managed rule that extraction appends to.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from shared.contract import errors
from shared.contract.models import Rule, RuleListResponse, RuleSetResponse
from shared.redact import redact
from store_worker.storage import validate as v

if TYPE_CHECKING:
    from shared.contract.clock import Clock
    from store_worker.storage.bank import Bank
    from store_worker.storage.banks import Banks
    from store_worker.storage.events import EventBus

LEARNED = "learned"


class Rules:
    """Each bank's rule files: list, get, set (and remove)."""

    def __init__(self, banks: Banks, events: EventBus, clock: Clock) -> None:
        self.banks = banks
        self.events = events
        self.clock = clock

    def rule_list(self, *, bank: str | None = None) -> RuleListResponse:
        target = self.banks.resolve(bank)
        rules = tuple(
            Rule(name=name, content=content, chars=len(content), learned=name == LEARNED)
            for name, content in sorted(target.rules.items())
        )
        return RuleListResponse(bank=target.name, rules=rules)

    def rule_get(self, name: str, *, bank: str | None = None) -> Rule:
        target = self.banks.resolve(bank)
        content = target.rules.get(v.rule_name(name))
        if content is None:
            raise errors.NotFoundError(f"no rule {v.quoted(name)} in bank {target.name!r}")
        return Rule(name=name, content=content, chars=len(content), learned=name == LEARNED)

    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse:
        """Create, replace or (with empty content) remove one rule."""
        name = v.rule_name(name)
        if content:  # a new rule's name becomes a file name: it must hold no credential
            v.no_credential(name, "rule name")
        if not isinstance(content, str):
            raise errors.InvalidArgumentError("rule content must be a string")
        v.utf8(content, "rule content")
        if len(content) > v.MAX_RULE_CHARS:
            raise errors.InvalidArgumentError(
                f"rule is {len(content)} chars; the limit is {v.MAX_RULE_CHARS}"
            )
        if expect is not None and not isinstance(expect, str):
            raise errors.InvalidArgumentError("expect must be the rule's content as read")
        if expect is not None and _held(self.banks, bank, name) != expect:
            # a read-modify-write (the extractor extending ``learned``) whose read is stale:
            # another writer changed the rule since; writing would drop its change
            raise errors.ConflictError(
                f"rule {name} changed since it was read; read it again and reapply the change"
            )
        result = redact(content)
        target, made = self.banks.resolve_made(bank, create=bool(content.strip()))
        with self._taking_back(target, made):
            self.banks.writable(target)
            if content.strip() and name not in target.rules:
                _refuse_unread(target, name)
        if not content.strip():
            try:
                removed = target.files.remove_rule(name)
            except errors.MemoryServiceError:
                _follow_file(target, name)
                raise
            target.rules.pop(name, None)
            _settled(target, name)
            if removed:
                self.events.emit(
                    "bank-changed", "rules-changed", target.name, now=self.clock.now_ms()
                )
            return RuleSetResponse(ok=True, exists=False, bank=target.name, name=name)
        with self._taking_back(target, made):
            self.write(target, name, result.text, result.labels)
        return RuleSetResponse(
            ok=True, exists=True, bank=target.name, name=name, redacted=result.labels
        )

    @contextmanager
    def _taking_back(self, bank: Bank, made: bool) -> Iterator[None]:
        """A refused rule write leaves no new bank behind: one this call made goes again
        (``Banks.take_back``) unless the rule's file got in place (a fault past its rename)."""
        try:
            yield
        except errors.MemoryServiceError:
            if made:
                self.banks.take_back(bank)
            raise

    def write(self, bank: Bank, name: str, text: str, redacted: tuple[str, ...]) -> None:
        """Write one (already redacted) rule atomically, then RAM, then ``rules-changed``
        naming the kinds redacted (``rule_set``, and ``redact_rescan`` in ``purge.py``)."""
        try:
            bank.files.write_rule(name, text)
        except errors.MemoryServiceError:
            _follow_file(bank, name)
            raise
        bank.rules[name] = text
        _settled(bank, name)
        self.events.emit(
            "bank-changed", "rules-changed", bank.name, now=self.clock.now_ms(), redacted=redacted
        )


def _refuse_unread(bank: Bank, name: str) -> None:
    """Never replace a rule file that is there but was not read: not UTF-8 after a hand
    edit, or an I/O error when the bank loaded. A writer that extends a rule sends back
    what it read plus its lines (the extractor's ``learned``): from a rule it could not see,
    that write erased every line before it. Readable now (the error passed), RAM takes it
    and the caller is refused retryably, to read it and ask again; still unreadable, the
    write is refused until the file is fixed or removed (an empty ``rule_set``)."""
    path = bank.files.rules_dir / f"{name}.md"
    try:
        content = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return
    except OSError as e:
        raise errors.storage_error(f"cannot read rule {name!r} in {path}", e) from e
    except UnicodeDecodeError as e:
        raise errors.ConflictError(
            f"rule {name!r} of bank {bank.name!r} is in {path} but is not UTF-8 (byte "
            f"{e.start}); it is not replaced unseen: fix the file or remove the rule first"
        ) from e
    bank.rules[name] = content
    _settled(bank, name)
    raise errors.SourceUnavailableError(
        f"rule {name!r} of bank {bank.name!r} could not be read when the bank loaded and "
        "now can: read it and set it again",
        retryable=True,
    )


def shown_rules(bank: Bank) -> dict[str, str]:
    """The rules a prompt carries: the readable ones, and each whose file could not be read
    with its last good text (kept in RAM from before), or a line saying it is missing."""
    shown = {
        name: bank.stale_rules.get(name, f"(rule file could not be read: {why})")
        for name, why in bank.unread_rules.items()
    }
    shown.update(bank.rules)
    return shown


def _settled(bank: Bank, name: str) -> None:
    """The rule's file was read or replaced (or removed): no longer unread, and the text
    kept from before it could not be read is not shown any more."""
    bank.unread_rules.pop(name, None)
    bank.stale_rules.pop(name, None)


def _follow_file(bank: Bank, name: str) -> None:
    """After a refused write or removal, RAM takes what the rule's file says: a failure
    past the rename or the unlink (the folder's fsync) leaves the change in place, and the
    next boot would read it (the caller was told it failed: it may not be durable)."""
    content = bank.files.read_rules().get(name)
    if content is None:
        bank.rules.pop(name, None)
    else:
        bank.rules[name] = content


def _held(banks: Banks, bank: str | None, name: str) -> str:
    """What rule ``name`` holds now ("" when it or its bank does not exist)."""
    try:
        return banks.resolve(bank).rules.get(name, "")
    except errors.NotFoundError:
        return ""
