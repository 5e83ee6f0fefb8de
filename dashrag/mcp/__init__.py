"""The Model Context Protocol face: saved trees as tools an agent calls (docs/mcp.md).

``dashrag mcp --trees DIR`` serves them over stdio; ``dashrag serve`` over streamable HTTP at
``/mcp``. Both answer from the service's :class:`~dashrag.service.collections.CollectionRegistry`,
so a tree is the same collection through every face. The ``mcp`` SDK is an extra (``dashrag[mcp]``),
imported only by :mod:`dashrag.mcp.server`.
"""
