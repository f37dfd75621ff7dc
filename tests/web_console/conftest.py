"""Fixtures of the console's tests: a real embedded store, the console served over it by
uvicorn on a loopback port, and (browser tests) one headless Debian chromium for the session.

Without chromium, its chromedriver or selenium the browser tests skip, saying what is missing;
under ``CI=true`` they fail instead (.ci/run installs both with apt). Each page a browser test
visits is saved as a screenshot in ``tests/artifacts/console/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared.contract.config import StoreSettings
from store_worker.core import MemoryStore
from web_console.app import build_app
from web_console.auth import Gate
from web_console.server import Server

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "console"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TOKEN = "console-test-token"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)


@dataclass
class Served:
    """A console on a real port over a real store."""

    store: MemoryStore
    gate: Gate
    url: str


def open_store(root: Path) -> MemoryStore:
    # ratification on: drafts can wait for approval
    return MemoryStore(root, settings=StoreSettings(ratification=True))


@pytest.fixture(scope="session")
def served() -> Iterator[Served]:
    root = Path(tempfile.mkdtemp(prefix="console-"))
    store = open_store(root / "data")
    gate = Gate(TOKEN)
    app = build_app(store, gate, dashboard_url="http://127.0.0.1:8265", page_size=50)
    server = Server(app, "127.0.0.1", 0).start()
    try:
        yield Served(store, gate, server.url)
    finally:
        server.stop()
        store.close()
        shutil.rmtree(root, ignore_errors=True)


def _missing() -> str | None:
    """What the browser tests lack on this machine, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (apt-get install {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="session")
def browser(served: Served) -> Iterator[Any]:
    """One headless chromium for the session, signed in to the console."""
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the console's browser tests need a browser under CI: {missing}")
        pytest.skip(f"no browser for the console's tests: {missing}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        driver.get(f"{served.url}/login?token={TOKEN}")
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="session")
def shot(browser: Any) -> Callable[[str], Path]:
    """``shot(name)``: save what the browser shows as ``tests/artifacts/console/<name>.png``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        browser.save_screenshot(str(path))
        return path

    return take
