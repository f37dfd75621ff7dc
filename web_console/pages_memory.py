"""Pages about memories: banks, a bank's list and search, one memory (history, edits).

Each form action is one store operation: ``save``, ``update`` (guarded by the revision the
form was shown at), ``pin``, ``supersede``, ``delete``.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import RedirectResponse, Response

from shared.contract import errors
from shared.contract.models import HistoryResponse, Memory
from shared.redact import redact
from web_console.app import Page, status_for
from web_console.explain import boosts, explain


def bank_url(bank: str, tail: str = "") -> str:
    from urllib.parse import quote

    return f"/b/{quote(bank, safe='')}{tail}"


def memory_url(bank: str, id: str) -> str:
    from urllib.parse import quote

    return bank_url(bank, f"/m/{quote(id, safe='')}")


async def home(page: Page) -> Response:
    return await banks(page)


async def banks(page: Page, error: errors.MemoryServiceError | None = None) -> Response:
    listing = page.store.bank_list()
    status = status_for(error) if error else 200
    return page.render("banks.html", status, banks=listing.banks, error=error, form=page.form)


def tags_of(raw: str) -> list[str] | None:
    """A form's comma-separated tags. A tag that holds a credential is refused, not dropped:
    a tag is a handle, and typing a secret into one is a slip the page should stop."""
    tags = [t.strip() for t in raw.split(",") if t.strip()]
    for tag in tags:
        found = redact(tag).labels
        if found:
            raise errors.InvalidArgumentError(
                f"a tag holds a credential ({', '.join(sorted(found))}); tags are handles: "
                "remove it"
            )
    return tags or None


async def save(page: Page) -> Response:
    bank = page.arg("bank") or None
    try:
        tags = tags_of(page.arg("tags"))
        done = page.store.save(page.form.get("text", ""), bank=bank, tags=tags)
    except errors.MemoryServiceError as e:
        return await banks(page, e)
    note = f"; redacted: {', '.join(done.redacted)}" if done.redacted else ""
    verb = "saved" if done.created else "reinforced"
    return page.done(memory_url(done.bank, done.memory.id), f"{verb} {done.memory.id}{note}")


async def bank(page: Page) -> Response:
    """A bank's memories, a page at a time; with ``q``, the search's hits instead."""
    name = page.path("bank")
    query = page.arg("q").strip()
    context: dict[str, Any] = {"bank": name, "q": query}
    if query:
        found = page.store.recall(query, bank=name, limit=20)
        context["hits"] = [(hit, explain(hit, found.retrieval)) for hit in found.memories]
        context["read_as"] = found.read_as
        if page.request.headers.get("hx-request"):
            return page.render("_hits.html", **context)
    else:
        listed = page.store.list(
            bank=name, page_size=page.console.page_size, page_token=page.arg("page") or None
        )
        context.update(memories=listed.memories, total=listed.total, next=listed.next_page_token)
    return page.render("bank.html", **context)


async def memory(page: Page, error: errors.MemoryServiceError | None = None) -> Response:
    name, id = page.path("bank"), page.path("id")
    history: HistoryResponse = page.store.history(id, bank=name)
    current = history.revisions[-1]
    return page.render(
        "memory.html",
        status_for(error) if error else 200,
        bank=name,
        m=current,
        history=history,
        events=events(history),
        boosts=boosts(current),
        error=error,
        form=page.form if error else {},
    )


FIELDS = ("text", "title", "tags", "pinned", "status", "occurred_at", "corroboration")


def events(history: HistoryResponse) -> list[tuple[Memory, str]]:
    """Each revision with what it changed from the one before (created, edited, pinned...)."""
    out = []
    before: Memory | None = None
    for m in history.revisions:
        if before is None:
            what = "created"
        elif m.invalid_at is not None and before.invalid_at is None:
            what = f"superseded by {m.superseded_by}" if m.superseded_by else "forgotten"
        elif m.pinned != before.pinned:
            what = "pinned" if m.pinned else "unpinned"
        else:
            changed = [f for f in FIELDS if getattr(m, f) != getattr(before, f)]
            what = ", ".join(changed) + " changed" if changed else "rewritten"
        out.append((m, what))
        before = m
    return out


async def edit(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    try:
        tags = tags_of(page.arg("tags"))
        done = page.store.update(
            id,
            bank=name,
            text=page.form.get("text", ""),
            title=page.form.get("title", ""),
            tags=tags or [],
            revision=_revision(page),
        )
    except errors.MemoryServiceError as e:
        return await memory(page, e)
    note = f"; redacted: {', '.join(done.redacted)}" if done.redacted else ""
    return page.done(memory_url(name, id), f"edited {id} (revision {done.memory.revision}){note}")


async def pin(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    pinned = page.arg("pinned") == "1"
    said = f"{'pinned' if pinned else 'unpinned'} {id}"
    return await page.act(
        lambda: page.store.pin(id, pinned, bank=name), memory, memory_url(name, id), said
    )


async def supersede(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    try:
        done = page.store.supersede(
            id,
            page.arg("superseded_by").strip(),
            bank=name,
            reason=page.arg("reason") or None,
            revision=_revision(page),
        )
    except errors.MemoryServiceError as e:
        return await memory(page, e)
    return page.done(memory_url(name, id), f"{id} superseded by {done.survivor.id}")


async def forget(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    return await page.act(
        lambda: page.store.delete(id, bank=name, reason=page.arg("reason") or None),
        memory,
        memory_url(name, id),
        f"forgot {id} (kept in its history)",
    )


def _revision(page: Page) -> int | None:
    raw = page.arg("revision")
    if not raw:
        return None
    if not raw.isdigit():
        raise errors.InvalidArgumentError(f"revision must be a number, not {raw!r}")
    return int(raw)


async def go_bank(page: Page) -> Response:
    """The bank picker's form: ``/go?bank=B`` to that bank's page."""
    return RedirectResponse(bank_url(page.arg("bank") or "main"), status_code=303)


ROUTES = [
    ("/", "read", home, ["GET"]),
    ("/go", "read", go_bank, ["GET"]),
    ("/save", "write", save, ["POST"]),
    ("/b/{bank}", "read", bank, ["GET"]),
    ("/b/{bank}/m/{id}", "read", memory, ["GET"]),
    ("/b/{bank}/m/{id}/edit", "write", edit, ["POST"]),
    ("/b/{bank}/m/{id}/pin", "write", pin, ["POST"]),
    ("/b/{bank}/m/{id}/supersede", "write", supersede, ["POST"]),
    ("/b/{bank}/m/{id}/forget", "write", forget, ["POST"]),
]
