"""The console's flows through real pages in a headless chromium, against a real embedded
store that the console serves: browse, search, edit, supersede, pin; approve and reject drafts;
retry and drop dead letters; run a consolidation dry run and apply it; a rule edited with its
diff shown first; and the bad inputs (an empty text, a credential in a tag, a 100 KB paste, a
stale edit, a stale plan), each shown as the CLI prints its error, writing nothing.

Each test uses a bank of its own on the session's store. Every page visited is saved as a
screenshot in tests/artifacts/console/ (the conftest's ``shot``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from shared.contract import errors
from store_worker.core import MemoryStore

from .conftest import TOKEN, Served

pytestmark = pytest.mark.browser

Shot = Callable[[str], Path]


def by_id(browser: Any, id: str) -> Any:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, id)


def has(browser: Any, id: str) -> bool:
    from selenium.webdriver.common.by import By

    return bool(browser.find_elements(By.ID, id))


def click(browser: Any, id: str) -> None:
    """Click a button that submits a form and wait for the next page."""
    from selenium.webdriver.support.ui import WebDriverWait

    old = browser.find_element("tag name", "html")
    by_id(browser, id).click()
    WebDriverWait(browser, 30).until(lambda _: gone(old))


def gone(element: Any) -> bool:
    """Whether ``element`` left the document (the page it was on was replaced). Selenium's
    ``staleness_of`` knows only ``StaleElementReferenceException``; a newer chromedriver asked
    about an element while the next page loads may answer "Node with given id does not belong
    to the document" instead, which means the same."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as e:
        if "does not belong to the document" in str(e):
            return True
        raise
    return False


def fill(browser: Any, id: str, text: str) -> None:
    """Set a field's value (through the DOM: a 100 KB paste typed key by key takes minutes)."""
    browser.execute_script("arguments[0].value = arguments[1];", by_id(browser, id), text)


def cli_error(call: Callable[[], object]) -> str:
    """The line the CLI prints for what ``call`` raises (``error: <category>: <message>``)."""
    with pytest.raises(errors.MemoryServiceError) as e:
        call()
    return f"error: {e.value.category}: {e.value.message}"


def test_browse_search_and_read_a_memory(served: Served, browser: Any, shot: Shot) -> None:
    store, bank = served.store, "browse"
    tabs = store.save("The user indents with tabs, never spaces", bank=bank, tags=["style"])
    store.save("The user deploys on Fridays", bank=bank, tags=["ops"])
    # the banks page lists the bank with its counts, and links the Ray dashboard
    browser.get(f"{served.url}/")
    assert bank in by_id(browser, "banks").text
    assert by_id(browser, "nav-dashboard").get_attribute("href") == "http://127.0.0.1:8265/"
    shot("banks")
    # a bank's page lists its memories
    browser.get(f"{served.url}/b/{bank}")
    listed = by_id(browser, "memories").text
    assert tabs.memory.id in listed and "deploys on Fridays" in listed
    shot("bank-list")
    # search: each hit with its explanation (the store's score fields)
    fill(browser, "q", "tabs or spaces")
    click(browser, "search")
    hits = by_id(browser, "hits").text
    assert tabs.memory.id in hits and "relevance" in hits and "retrieval" in hits
    shot("search")
    # typing in the box asks again as one types (htmx swaps the results in; no page load)
    from selenium.webdriver.support.ui import WebDriverWait

    page = browser.find_element("tag name", "html")
    box = by_id(browser, "q")
    box.clear()
    box.send_keys("Fridays")
    WebDriverWait(browser, 30).until(lambda b: "deploys on Fridays" in by_id(b, "results").text)
    assert browser.find_element("tag name", "html") == page  # the same page, results swapped
    assert tabs.memory.id not in by_id(browser, "results").text
    # a memory: fields, provenance, history
    browser.get(f"{served.url}/b/{bank}/m/{tabs.memory.id}")
    assert by_id(browser, "text").text == "The user indents with tabs, never spaces"
    assert by_id(browser, "tags").text == "style" and "created" in by_id(browser, "history").text
    shot("memory")


def test_edit_pin_and_supersede(served: Served, browser: Any, shot: Shot) -> None:
    store, bank = served.store, "curate"
    old = store.save("The user publishes on Tuesdays", bank=bank).memory
    new = store.save("The user publishes on Wednesdays", bank=bank).memory
    page = f"{served.url}/b/{bank}/m/{old.id}"
    browser.get(page)
    fill(browser, "edit-text", "The user publishes on Tuesdays at noon")
    fill(browser, "edit-tags", "schedule")
    click(browser, "edit")
    assert "edited" in by_id(browser, "done").text
    assert by_id(browser, "text").text == "The user publishes on Tuesdays at noon"
    edited = store.get(old.id, bank=bank).memory
    assert (edited.revision, edited.tags) == (1, ("schedule",))
    assert "text, tags changed" in by_id(browser, "history").text
    shot("memory-edited")
    # pin, then unpin: one store call each
    click(browser, "pin")
    assert has(browser, "pinned") and store.get(old.id, bank=bank).memory.pinned
    shot("memory-pinned")
    click(browser, "pin")
    assert not has(browser, "pinned") and not store.get(old.id, bank=bank).memory.pinned
    # supersede by the newer memory: retired, the chain shown both ways
    fill(browser, "superseded-by-id", new.id)
    click(browser, "supersede")
    assert f"superseded by {new.id}" in by_id(browser, "done").text
    assert by_id(browser, "status").text == "retired"
    assert by_id(browser, "superseded-by").text == new.id
    assert store.get(old.id, bank=bank).memory.superseded_by == new.id
    shot("memory-superseded")
    browser.get(f"{served.url}/b/{bank}/m/{new.id}")
    assert old.id in by_id(browser, "chain").text


def test_bad_input_shows_the_clis_error_and_writes_nothing(
    served: Served, browser: Any, shot: Shot
) -> None:
    store, bank = served.store, "bad-input"
    mem = store.save("The user reviews code in the morning", bank=bank, tags=["habit"]).memory
    page = f"{served.url}/b/{bank}/m/{mem.id}"

    def unchanged() -> None:
        now = store.get(mem.id, bank=bank).memory
        assert (now.revision, now.text, now.tags) == (0, mem.text, ("habit",))

    # an empty text
    browser.get(page)
    fill(browser, "edit-text", "   ")
    click(browser, "edit")
    said = by_id(browser, "error").text
    assert said == cli_error(lambda: store.update(mem.id, bank=bank, text="   "))
    unchanged()
    shot("bad-input-empty-text")
    # a credential in a tag: refused by kind, its value never shown
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    browser.get(page)
    fill(browser, "edit-tags", f"habit, {key}")
    click(browser, "edit")
    said = by_id(browser, "error").text
    assert said.startswith("error: invalid_argument: a tag holds a credential (aws_access_key)")
    assert key not in said
    unchanged()
    shot("bad-input-credential-tag")
    # a 100 KB paste
    paste = "lorem ipsum " * (100 * 1024 // 12)
    browser.get(page)
    fill(browser, "edit-text", paste)
    click(browser, "edit")
    said = by_id(browser, "error").text
    assert said == cli_error(lambda: store.update(mem.id, bank=bank, text=paste))
    unchanged()
    shot("bad-input-100kb-paste")
    # a stale edit: the memory changed after the page was shown
    browser.get(page)
    store.update(mem.id, bank=bank, text="The user reviews code after lunch")
    fill(browser, "edit-text", "The user reviews code at night")
    click(browser, "edit")
    said = by_id(browser, "error").text
    assert said.startswith("error: invalid_argument: ") and "changed since it was read" in said
    assert said == cli_error(
        lambda: store.update(mem.id, bank=bank, text="x", revision=mem.revision)
    )
    assert store.get(mem.id, bank=bank).memory.text == "The user reviews code after lunch"
    shot("bad-input-stale-edit")
    # an empty text on the banks page's save form
    browser.get(f"{served.url}/")
    fill(browser, "save-text", "")
    click(browser, "save")
    assert by_id(browser, "error").text == cli_error(lambda: store.save(""))


def test_approve_and_reject_drafts(served: Served, browser: Any, shot: Shot) -> None:
    store, bank = served.store, "drafts"
    keep = store.save("The user wants weekly summaries", bank=bank, status="pending").memory
    drop = store.save("The user hates summaries", bank=bank, status="pending").memory
    browser.get(f"{served.url}/b/{bank}/drafts")
    assert keep.id in by_id(browser, "drafts").text
    shot("drafts")
    click(browser, f"approve-{keep.id}")
    assert f"approved {keep.id}" in by_id(browser, "done").text
    assert store.get(keep.id, bank=bank).memory.status == "canonical"
    click(browser, f"reject-{drop.id}")
    assert f"rejected {drop.id}" in by_id(browser, "done").text
    assert store.drafts(bank=bank) == ()
    shot("drafts-done")


def _dead_letter(store: MemoryStore, text: str) -> str:
    msgs = [{"role": "user", "content": text}]
    job = store.turn_completed(f"s-{ULID()}", str(ULID()), msgs).job_id
    assert job
    claimed: list[str] = []
    for _ in range(100):  # the session's queue holds only what these tests put there
        claimed += [j.job_id for j in store.outbox_claim(8)]
        if job in claimed:
            break
    store.outbox_fail(job, "the model answered nonsense", dead_letter=True)
    return job


def test_retry_and_drop_dead_letters(served: Served, browser: Any, shot: Shot) -> None:
    store = served.store
    retry, drop = _dead_letter(store, "I like tea"), _dead_letter(store, "I like coffee")
    browser.get(f"{served.url}/outbox")
    assert "the model answered nonsense" in by_id(browser, f"job-{retry}").text
    shot("outbox")
    click(browser, f"retry-{retry}")
    assert f"queued {retry} again" in by_id(browser, "done").text
    assert store.outbox_job(retry).dead_at is None
    click(browser, f"drop-{drop}")
    assert f"dropped {drop}" in by_id(browser, "done").text
    with pytest.raises(errors.NotFoundError):
        store.outbox_job(drop)
    shot("outbox-done")
    store.outbox_ack(retry)  # leave the queue as found


def test_consolidation_dry_run_then_apply_exactly_that_plan(
    served: Served, browser: Any, shot: Shot
) -> None:
    store, bank = served.store, "dupes"
    keep = store.save("The user likes dark mode in every editor", bank=bank).memory
    lose = store.save("The user likes dark mode in every editor!", bank=bank, reinforce=False)
    browser.get(f"{served.url}/consolidate")
    shot("consolidate")
    fill(browser, "dry-run-bank", bank)
    click(browser, "dry-run")
    assert "dry run over 1 bank(s)" in by_id(browser, "summary").text
    # side by side: the memory kept and the one retired, each with its text
    kept = browser.find_element("css selector", ".merge .keep h3 a").text
    retired = browser.find_element("css selector", ".merge .retire h3 a").text
    assert {kept, retired} == {keep.id, lose.memory.id}
    assert "dark mode" in browser.find_element("css selector", ".merge .retire p").text
    assert store.get(retired, bank=bank).memory.live  # a dry run writes nothing
    shot("consolidate-dry-run")
    click(browser, "apply")
    assert "applied the plan shown: 1 memories retired" in by_id(browser, "done").text
    # exactly the plan shown: the retired one superseded into the kept one
    assert store.get(retired, bank=bank).memory.superseded_by == kept
    assert store.get(kept, bank=bank).memory.live
    shot("consolidate-applied")


def test_a_plan_the_store_moved_past_is_not_applied(
    served: Served, browser: Any, shot: Shot
) -> None:
    store, bank = served.store, "stale-plan"
    store.save("The user runs tests before every commit", bank=bank)
    store.save("The user runs tests before every commit!", bank=bank, reinforce=False)
    browser.get(f"{served.url}/consolidate")
    fill(browser, "dry-run-bank", bank)
    click(browser, "dry-run")
    retired = browser.find_element("css selector", ".merge .retire h3 a").text
    # the memory to retire is edited after the plan was shown
    store.update(retired, bank=bank, text="The user runs tests before pushing")
    click(browser, "apply")
    said = by_id(browser, "error").text
    assert "the store changed since this plan was shown" in said
    assert by_id(browser, "dry-run").text == "Run a fresh dry run"
    assert store.get(retired, bank=bank).memory.live  # nothing was applied
    shot("consolidate-stale")


def test_a_rule_edit_shows_its_diff_before_saving(
    served: Served, browser: Any, shot: Shot
) -> None:
    store, bank = served.store, "rules"
    store.rule_set("style", "- Use tabs\n- Short lines\n", bank=bank)
    store.rule_set("learned", "- The user reviews in the morning\n", bank=bank)
    browser.get(f"{served.url}/b/{bank}/rules")
    assert "The user reviews in the morning" in by_id(browser, "learned").text
    shot("rules")
    click(browser, "edit-style")  # a link: the same wait
    fill(browser, "rule-content", "- Use tabs\n- Lines under 100 chars\n")
    shot("rule-edit")
    click(browser, "show-diff")
    diff = by_id(browser, "diff").text
    assert "-- Short lines" in diff and "+- Lines under 100 chars" in diff
    assert store.rule_get("style", bank=bank).content == "- Use tabs\n- Short lines\n"
    shot("rule-diff")
    click(browser, "save-rule")
    assert "saved rule style" in by_id(browser, "done").text
    assert store.rule_get("style", bank=bank).content == "- Use tabs\n- Lines under 100 chars\n"


def test_preview_redaction_and_a_refused_visitor(
    served: Served, browser: Any, shot: Shot
) -> None:
    store, bank = served.store, "harness"
    store.save("The user prefers answers in French", bank=bank)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    saved = store.save(f"The CI token is {token}", bank=bank)
    assert saved.redacted
    browser.get(f"{served.url}/b/{bank}/preview?q=which+language+do+I+like")
    assert "tokens" in by_id(browser, "preview-summary").text
    assert "French" in by_id(browser, "injected").text
    shot("preview")
    browser.get(f"{served.url}/redaction")
    table = by_id(browser, "redacted").text
    assert saved.redacted[0] in table and token not in browser.page_source
    shot("redaction")
    # a rescan of the bank, purging: one redact_rescan, its answer by bank and kind
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("css selector", "#rescan-form select")).select_by_value(bank)
    by_id(browser, "purge").click()
    click(browser, "rescan")
    rows = by_id(browser, "rescan-result").text
    assert bank in rows and "yes" in rows and token not in browser.page_source
    assert store.get(saved.memory.id, bank=bank).memory.text.startswith("The CI token is [REDACTED")
    shot("redaction-rescan")
    # without the session cookie every page refuses
    browser.delete_all_cookies()
    browser.get(f"{served.url}/b/{bank}")
    assert by_id(browser, "error").text.startswith("error: unauthenticated")
    shot("refused")
    browser.get(f"{served.url}/login?token={TOKEN}")
    assert by_id(browser, "banks")


def test_the_outbox_page_shows_the_extractors_recent_runs(
    served: Served, browser: Any, shot: Shot
) -> None:
    from extract_worker.core import Extractor
    from extract_worker.settings import ExtractorSettings
    from shared.llm.fake import FakeLLM

    store = served.store
    # Given a turn, and an extractor over the console's store with a scripted model
    msgs = [{"role": "user", "content": "I moved to Lisbon last spring"}]
    job = store.turn_completed(f"s-{ULID()}", str(ULID()), msgs).job_id
    assert job
    reply = '{"memories": [{"text": "The user moved to Lisbon last spring"}], "rules": []}'
    extractor = Extractor(store, FakeLLM.of(reply), ExtractorSettings(extraction_model="fake"))
    # When it drains the outbox (the other tests' leftovers go with it)
    stats = extractor.drain()
    assert job in {r.job_id for r in stats.results}
    # Then the outbox page lists the run: its job, outcome, duration and what it saved
    browser.get(f"{served.url}/outbox")
    row = by_id(browser, f"run-{job}").text
    assert "done" in row and " ms" in row
    assert "1" in row.split("done", 1)[1]  # the memory it saved
    shot("outbox-runs")
