"""A page of ``ragjudge serve`` rendered from its template, with what every page shows (the
project's title, who is logged in, the base path under a public URL)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from ragjudge.web.context import TEMPLATES
from ragjudge.web.identity import Identity, context


def page(request: Request, template: str, ident: Identity | None, status: int = 200,
         **values: Any) -> HTMLResponse:
    ctx = context(request)
    return TEMPLATES.TemplateResponse(request, template, {
        "base": ctx.settings.base, "project_title": ctx.title,
        "who": None if ident is None else ident.who, **values}, status_code=status)
