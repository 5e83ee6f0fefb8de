"""dashrag: retriever components assembled into trees from JSON.

Quick start::

    import dashrag
    retriever = dashrag.build(config, dashrag.Corpus.from_path("docs/"), workdir="work/")
    chunks, trace = retriever.retrieve("what is BM25?")
    retriever.save("saved/")
    same = dashrag.load("saved/")
"""

from dashrag import builtin as _builtin  # noqa: F401  (registers the built-in components)
from dashrag.api import build, load, save
from dashrag.core.factory import build_component
from dashrag.core.restriction import Restriction
from dashrag.core.validation import validate_and_transform
from dashrag.documents.corpus import Corpus
from dashrag.errors import DashragError

__version__ = "0.1.0"

__all__ = ["build", "load", "save", "build_component", "validate_and_transform", "Corpus", "Restriction",
           "DashragError", "__version__"]
