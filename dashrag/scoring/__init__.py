"""Scoring math shared by components and by ``boolean/``, free of any component.

``bm25``: BM25 weights and query scoring (the BM25 retriever and the boolean text
index both use it), so ``boolean/`` needs no concrete retriever (docs/design.md).
"""
