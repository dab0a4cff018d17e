"""Web stage: the one ASGI application (Starlette, Jinja2 templates) for all the daemon serves over HTTP.

Routes:
- `/healthz` and `/metrics`, when the daemon hands in their content (computed in
  triagebot/daemon/health.py; this module only serves it);
- `/` the reports by triage state, newest first, with `triage list`'s filters as query
  parameters (`kind`, `list`, `since`, `testcase`, plus `state` and `limit`);
- `/r/<message-id>` one report as `triage show` shows it, with its plan, verdict, thread and
  lifecycle (another name of a stored message, dedup's alias, redirects to its kept key's
  page); `/r/<message-id>/plot.png` and `/plot.svg` the samples plot, the same matplotlib
  figure as triagebot/notify/plot.py draws for Slack;
- `/hosts` the lab: each host, busy or idle, and its queue (not served in public mode);
- `/look` to look at: the readings the daemon was unsure of that nobody has taken on or dismissed,
  each with why and the commands that decide it (issue 38; not served in public mode).

Read-only pages: only GET and HEAD are routed for them (anything else is 405), and a page reads the store
through the `Store` protocol, never writes. Every id and filter in a URL is checked
(views.checked_id, views.filters_from) and refused with 400 when malformed. Templates escape
everything they print (autoescape on, and no value is marked safe): reports are written by
strangers. Responses carry a Content-Security-Policy that allows no script at all.

Slack's endpoint (slack_app.py: buttons on the daemon's messages and the `/triage` command,
through slack-bolt) is mounted at `/slack/events` when `slack` is given: the one POST route,
every request's signature and age checked before anything is read from it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from triagebot.errors import TriageError
from triagebot.store.protocol import Store, StoreError, UnreadableRecord
from triagebot.web import views
from triagebot.web.views import BadRequest, Site

TEMPLATES = Path(__file__).resolve().parent / "templates"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'self'; "
                               "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
HealthAnswer = Callable[[], tuple[int, bytes, str]]  # () -> (status, body, content type)


@dataclass(frozen=True)
class Health:
    """The daemon's /healthz and /metrics: each a callable giving status, body and content type."""

    healthz: HealthAnswer
    metrics: HealthAnswer


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.globals["report_href"] = views.report_href
    return environment


Page = Callable[..., Response]  # (request, template name, status, **context) -> the page


def build_app(site: Site | None = None, health: Health | None = None, slack: Any = None) -> Starlette:
    """The application: the pages when `site` is given, /healthz and /metrics when `health` is,
    Slack's endpoint when `slack` (slack_app.SlackSettings) is."""
    templates = Jinja2Templates(env=_environment())

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context |= {"public": site.public if site else False}
        response = templates.TemplateResponse(request, name, context, status_code=status)
        response.headers.update(SECURITY_HEADERS)
        return response

    def problem(request: Request, status: int, title: str, detail: str) -> Response:
        return page(request, "problem.html", status, title=title, detail=detail)

    def answer(source: HealthAnswer) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            status, body, kind = source()
            return Response(body, status_code=status, headers={"Content-Type": kind})
        return endpoint

    routes = []
    if health is not None:
        routes += [Route("/healthz", answer(health.healthz), methods=["GET"]),
                   Route("/metrics", answer(health.metrics), methods=["GET"])]
    if site is not None:
        routes += _page_routes(site, page, problem)
    if slack is not None:
        from triagebot.web.slack_app import slack_routes  # slack-bolt only when Slack is set up

        routes += slack_routes(slack)

    async def not_found(request: Request, _error: Exception) -> Response:
        if site is None:
            return PlainTextResponse("not found: try /healthz or /metrics\n", status_code=404)
        return problem(request, 404, "Not found", "no page here: try / or /hosts")

    async def not_allowed(request: Request, _error: Exception) -> Response:
        return PlainTextResponse("read-only: GET and HEAD only\n", status_code=405,
                                 headers={"Allow": "GET, HEAD"} | SECURITY_HEADERS)

    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})


def _page_routes(site: Site, page: Page, problem: Callable[[Request, int, str, str], Response]) -> list[Route]:
    """The read-only pages over `site`'s store, each reading it through one connection."""
    stylesheet = (TEMPLATES / "style.css").read_bytes()

    def with_store(request: Request, action: Callable[[Store], Response]) -> Response:
        try:
            with site.open_store() as store:
                return action(store)
        except BadRequest as error:
            return problem(request, 400, "Bad request", str(error))
        except (StoreError, UnreadableRecord) as error:  # their words name the database: the team's only
            detail = "try again later" if site.public else str(error)
            return problem(request, 503, "The store cannot be read", detail)

    def index(request: Request) -> Response:
        def show(store: Store) -> Response:
            filters = views.filters_from(list(request.query_params.multi_items()))
            try:
                found = views.standing_of(store, site)
            except TriageError:
                found = None  # no hosts.toml: the reports are listed all the same, with no place in a lab
            sections = views.index_view(store, site, filters, found)
            return page(request, "index.html", sections=sections, filters=filters.query(),
                        kinds=views.REPORT_KINDS, states=views.INDEX_STATES,
                        polls=found.polls_line() if found is not None else None)
        return with_store(request, show)

    def report(request: Request) -> Response:
        def show(store: Store) -> Response:
            key = views.resolve(store, views.checked_id(request.path_params["message_id"]))
            if (kept := views.kept_report(store, site, key)) is not None:  # one message, the page under its kept key
                return RedirectResponse(views.report_href(kept), status_code=302, headers=SECURITY_HEADERS)
            found = views.report_view(store, site, key)
            if found is None:
                return problem(request, 404, "No such report", f"no report is stored under <{key}>")
            return page(request, "report.html", **found)
        return with_store(request, show)

    def plot(request: Request) -> Response:
        kind = request.path_params["format"]
        if kind not in ("png", "svg"):
            return problem(request, 404, "No such plot", "the plot is served as plot.png or plot.svg")

        def show(store: Store) -> Response:
            key = views.resolve(store, views.checked_id(request.path_params["message_id"]))
            key = views.kept_report(store, site, key) or key
            run = views.plot_run(store, site, key)
            if run is None:
                return problem(request, 404, "No plot", f"no rerun with samples on both sides for <{key}>")
            from triagebot.notify.plot import png_of, run_figure, svg_of  # matplotlib only when a plot is asked

            figure = run_figure(run)
            body, media = (png_of(figure), "image/png") if kind == "png" else (svg_of(figure), "image/svg+xml")
            return Response(body, media_type=media, headers=SECURITY_HEADERS | {"Cache-Control": "no-cache"})
        return with_store(request, show)

    def hosts(request: Request) -> Response:
        if site.public:
            return problem(request, 404, "Not served", "the lab is not shown on the public pages")

        def show(store: Store) -> Response:
            try:
                return page(request, "hosts.html", **views.hosts_view(store, site))
            except TriageError as error:  # no hosts.toml: say so on the page
                return page(request, "hosts.html", hosts=[], unplaced=[], unplaced_more=0,
                            rules_problem=str(error))
        return with_store(request, show)

    def look(request: Request) -> Response:
        if site.public:
            return problem(request, 404, "Not served", "what the team is unsure of is not on the public pages")

        def show(store: Store) -> Response:
            items, more = views.look_view(store, site)
            return page(request, "look.html", items=items, more=more)
        return with_store(request, show)

    def style(request: Request) -> Response:
        return Response(stylesheet, media_type="text/css", headers=SECURITY_HEADERS)

    return [Route("/", index, methods=["GET"]),
            Route("/r/{message_id:path}/plot.{format:str}", plot, methods=["GET"]),
            Route("/r/{message_id:path}", report, methods=["GET"]),
            Route("/hosts", hosts, methods=["GET"]),
            Route("/look", look, methods=["GET"]),
            Route("/style.css", style, methods=["GET"])]
