"""Vector indexes: where a dense node's chunk vectors live (in-process, Qdrant, PostgreSQL + pgvector).

``base`` fixes the contract, ``engine`` what the engine-backed ones share; one component per module.
See docs/engines.md.
"""
