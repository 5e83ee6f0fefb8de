"""``uvicorn component_services.rag_service.main:app``: the reference's module path, for deployments that name it.

``app`` is ``dashrag serve``'s application (dashrag.service.app.create_app) with its settings read from the
environment as ``dashrag serve`` reads them (``RAG_*`` and the reference's shared names; docs/service.md),
built when this module is imported, as the reference's is. Bad settings stop the import with the
ConfigError naming them.
"""

from __future__ import annotations

from dashrag.service.app import create_app
from dashrag.service.settings import load_settings

app = create_app(load_settings())
