"""Signing in with a scoped token in the session's headless chromium: a token made for one bank
(as `memory token create NAME --bank B` makes it) sees that bank only, on the banks page, in
search and on a memory's page, and another bank's page is refused. The browser signs back in
with the admin token afterwards (the other browser tests share it).

Screenshots go to tests/artifacts/console/ (the conftest's ``shot``).
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import TOKEN, Served
from .test_browser import Shot, by_id, click, fill, has

pytestmark = pytest.mark.browser


def test_a_bank_scoped_token_signs_in_and_sees_only_its_bank(
    served: Served, browser: Any, shot: Shot
) -> None:
    store = served.store
    ours = store.save("The team reviews pull requests in pairs", bank="scoped-ours").memory
    theirs = store.save("The other team reviews pull requests alone", bank="scoped-theirs").memory
    token = store.token_create("browser-ours", banks=["scoped-ours"])["token"]
    try:
        browser.get(f"{served.url}/login?token={token}")
        # signed in as the token's principal: its bank only, and no admin pages in the nav
        assert browser.current_url == f"{served.url}/"
        banks = by_id(browser, "banks").text
        assert "scoped-ours" in banks and "scoped-theirs" not in banks
        assert browser.find_element("class name", "who").text == "browser-ours"
        assert not has(browser, "nav-outbox")
        shot("scoped-banks")
        # its bank: the memory is listed and found by search
        browser.get(f"{served.url}/b/scoped-ours")
        assert ours.id in by_id(browser, "memories").text
        fill(browser, "q", "pull requests")
        click(browser, "search")
        hits = by_id(browser, "hits").text
        assert ours.id in hits and theirs.id not in hits
        shot("scoped-search")
        # another bank, and its memory, are refused; nothing of it is shown
        for url in ("/b/scoped-theirs", f"/b/scoped-theirs/m/{theirs.id}"):
            browser.get(served.url + url)
            assert "error: permission_denied" in by_id(browser, "error").text
            assert theirs.text not in browser.page_source
        shot("scoped-refused")
    finally:
        browser.get(f"{served.url}/login?token={TOKEN}")  # back to the admin for the others
    assert "scoped-theirs" in by_id(browser, "banks").text
