"""The page's files, served at ``/`` beneath the API without hiding the API's statuses.

A mount at ``/`` matches every path: without care, ``GET /retrieve`` (a POST-only route)
would be looked up as a file and answered 404. ``PageFiles`` first asks the API's routes:
a path one of them serves with another method is a 405, as if no page were mounted.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Match, Mount, Router
from starlette.staticfiles import StaticFiles
from starlette.types import Scope


class PageFiles(StaticFiles):
    def __init__(self, *, api: Router, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.api = api

    async def get_response(self, path: str, scope: Scope) -> Response:
        routes = [route for route in self.api.routes if not isinstance(route, Mount)]
        if any(route.matches(scope)[0] is Match.PARTIAL for route in routes):
            raise HTTPException(405)  # the app's 405 handler names the methods the path has
        return await super().get_response(path, scope)
