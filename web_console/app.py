"""The console's ASGI app (Starlette): routing, sign-in, rendering and the typed-error page.

``build_app(store, gate)`` serves pages over any ``StoreAPI`` (the Ray actor's, a gateway's, an
embedded store). Each page reads through the store contract; each form action is one store
operation, run only after ``Gate.authorize`` (``web_console.auth``) accepts the request's token,
permission and CSRF token, and every store call a page makes goes through
``shared.client.scoped.Scoped`` as the request's principal (``Page.store``). A refused or
failed operation re-renders the page it came from with the error as the CLI prints it
(``error: <category>: <message>``) and writes nothing; a done one redirects back (POST,
redirect, GET) with one line saying what was done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from shared.client.scoped import Scoped, SessionOwners
from shared.contract import errors
from shared.contract.api import StoreAPI
from web_console import fmt
from web_console.auth import (
    COOKIE,
    CSRF_FIELD,
    Forbidden,
    Gate,
    Principal,
    Scope,
    Unauthenticated,
    may,
)

HERE = Path(__file__).parent
MAX_FORM_BYTES = 256 * 1024  # a 100 KB paste reaches the store, which names its own limit

Handler = Callable[["Page"], Awaitable[Response]]


@dataclass
class Page:
    """One request as a page handler sees it: the console, who asks, the form (a POST)."""

    console: Console
    request: Request
    who: Principal
    token: str
    form: dict[str, str]

    @property
    def store(self) -> StoreAPI:
        """The store as this request's principal may use it: the enforcement layer the
        gateway uses (``Scoped``), so a page never checks a bank or an id itself."""
        return Scoped(self.console.store, self.who, self.console.owners)

    def arg(self, name: str, default: str = "") -> str:
        return self.form.get(name) or self.request.query_params.get(name) or default

    def path(self, name: str) -> str:
        return str(self.request.path_params[name])

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return self.console.render(self, template, status, **context)

    def done(self, url: str, message: str) -> RedirectResponse:
        """After a write: back to a page, saying what was done (POST, redirect, GET)."""
        sep = "&" if "?" in url else "?"
        return RedirectResponse(f"{url}{sep}{urlencode({'done': message})}", status_code=303)

    async def act(
        self,
        write: Callable[[], Any],
        shown: Callable[[Page, errors.MemoryServiceError], Awaitable[Response]],
        url: str,
        said: str | Callable[[Any], str],
    ) -> Response:
        """One form action: ``write`` (its one store operation), then back to ``url`` saying
        ``said`` (or what ``said`` makes of the answer); a typed error is shown on the page the
        form came from (``shown``), and nothing was written."""
        try:
            answer = write()
        except errors.MemoryServiceError as e:
            return await shown(self, e)
        return self.done(url, said(answer) if callable(said) else said)


class Console:
    """What every handler shares: the store, the gate, the templates, the dashboard link."""

    def __init__(
        self, store: StoreAPI, gate: Gate, *, dashboard_url: str | None, page_size: int
    ) -> None:
        self.store = store
        self.gate = gate
        gate.bind(store)
        self.owners = SessionOwners(store)
        self.dashboard_url = dashboard_url
        self.page_size = page_size
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["when"] = fmt.when
        self.env.filters["q"] = lambda s: quote(str(s), safe="")

    def render(self, page: Page, template: str, status: int, **context: Any) -> HTMLResponse:
        body = self.env.get_template(template).render(
            csrf=self.gate.csrf(page.token),
            csrf_field=CSRF_FIELD,
            who=page.who,
            may_write=may(page.who, "write"),
            is_admin=may(page.who, "admin"),
            dashboard_url=self.dashboard_url,
            done=page.request.query_params.get("done"),
            request=page.request,
            **context,
        )
        return HTMLResponse(body, status_code=status)

    def page(self, need: Scope, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A route: authorize first (the one gate), then run the handler; a typed error on a
        GET is a page saying so (a POST handler re-renders its own page with it)."""

        async def endpoint(request: Request) -> Response:
            token = _token(request)
            form: dict[str, str] = {}
            try:
                if request.method == "POST":
                    form = await _form(request)
            except errors.MemoryServiceError as e:
                return self._refused(e, 413)
            try:  # the store answers a scoped token: down, it is the store's typed error
                who = self.gate.authorize(
                    token, need, form.get(CSRF_FIELD), form=request.method == "POST"
                )
            except (Unauthenticated, Forbidden) as e:
                status = 401 if isinstance(e, Unauthenticated) else 403
                return self._refused(e, status)
            except errors.MemoryServiceError as e:
                return self._refused(e, status_for(e))
            page = Page(self, request, who, token or "", form)
            try:
                return await handler(page)
            except errors.MemoryServiceError as e:
                return page.render("error.html", status_for(e), error=e)

        return endpoint

    def _refused(self, e: errors.MemoryServiceError, status: int) -> HTMLResponse:
        body = self.env.get_template("refused.html").render(error=e)
        return HTMLResponse(body, status_code=status)


def status_for(e: errors.MemoryServiceError) -> int:
    if isinstance(e, errors.NotFoundError):
        return 404
    if isinstance(e, errors.PermissionDeniedError):
        return 403
    if isinstance(e, errors.ConflictError):
        return 409
    if isinstance(e, errors.SourceUnavailableError):
        return 503
    if isinstance(e, errors.UnknownError):
        return 500
    return 400


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE)


async def _form(request: Request) -> dict[str, str]:
    size = int(request.headers.get("content-length") or 0)
    if size > MAX_FORM_BYTES:
        raise errors.InvalidArgumentError(f"the form is {size} bytes; at most {MAX_FORM_BYTES}")
    async with request.form(max_part_size=MAX_FORM_BYTES) as data:
        # a browser sends every line break of a field as CRLF (the HTML form encoding): the
        # store keeps LF, and a rule's ``expect`` must match what it holds
        return {k: v.replace("\r\n", "\n") for k, v in data.items() if isinstance(v, str)}


def login(gate: Gate) -> Callable[[Request], Awaitable[Response]]:
    """``/login?token=T``: a known token (the admin's or a scoped one) becomes the session
    cookie, and the URL loses it."""

    async def endpoint(request: Request) -> Response:
        token = request.query_params.get("token")
        try:
            gate.principal(token)
        except Unauthenticated:
            return HTMLResponse(
                "unknown or revoked token: open the console URL `memory up` printed", 401
            )
        except errors.MemoryServiceError as e:
            return HTMLResponse(escape(f"error: {e.category}: {e.message}"), status_for(e))
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, token or "", httponly=True, samesite="strict", path="/")
        return response

    return endpoint


def build_app(
    store: StoreAPI,
    gate: Gate,
    *,
    dashboard_url: str | None = None,
    page_size: int = 50,
) -> Starlette:
    """The console over ``store``, asking ``gate`` about every request."""
    from web_console import pages_harness, pages_memory, pages_review

    console = Console(store, gate, dashboard_url=dashboard_url, page_size=page_size)
    routes: list[Route | Mount] = [
        Route("/login", login(console.gate)),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    for module in (pages_memory, pages_harness, pages_review):
        for path, need, handler, methods in module.ROUTES:
            routes.append(Route(path, console.page(need, handler), methods=methods))
    app = Starlette(routes=routes)
    app.state.console = console
    return app
