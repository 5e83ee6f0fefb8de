"""Component names → classes, plus the UI metadata registered with each.

Built-in components register themselves when ``dashrag`` is imported; third-party
packages add theirs through the entry-point group ``dashrag.components`` (each entry
point names a module or class whose import registers components). Entry points are
loaded once, on the first lookup, so an uninstalled plugin costs nothing.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, TypeVar

from dashrag.errors import ConfigIssue, UnknownComponentError, excerpt

if TYPE_CHECKING:
    from dashrag.core.component import ConfigObject

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "dashrag.components"
KINDS = ("retriever", "embedding", "vectorizer", "llm", "prompt", "credential", "chunker", "reranker")


@dataclass(frozen=True)
class Display:
    """A component's name and one-line description in one language."""

    name: str
    description: str


@dataclass(frozen=True)
class ComponentMeta:
    """What a UI needs beyond the JSON Schema: names, icon, category, how to draw a node.

    ``representation`` maps a language to a template with ``{param}`` / ``{nested.param}``
    placeholders (``{"en": "BM25 k1={k1} b={b}", "es": ...}``); ``operation`` says what a
    composite does with its children, for the tree view.
    """

    kind: str
    display: Mapping[str, Display]
    icon: str
    category: str
    representation: Mapping[str, str]
    operation: str | None = None
    languages: tuple[str, ...] = field(default=("en", "es"))

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "display": {lang: {"name": d.name, "description": d.description} for lang, d in self.display.items()},
            "icon": self.icon,
            "category": self.category,
            "representation": dict(self.representation),
            **({"operation": self.operation} if self.operation else {}),
        }


_REGISTRY: dict[str, type[ConfigObject]] = {}
_plugins_loaded = False

C = TypeVar("C", bound="type[ConfigObject]")


def register(
    *,
    kind: str,
    en: tuple[str, str],
    es: tuple[str, str],
    icon: str,
    category: str,
    representation: str | Mapping[str, str],
    operation: str | None = None,
    name: str | None = None,
) -> Callable[[C], C]:
    """Class decorator: register a component under ``name`` (default: the class name).

    ``en`` and ``es`` are ``(display name, one-line description)``; every component
    has both so the UI never shows a half-translated form. ``representation`` is a
    template per language (en and es at least), or one template for every language.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown component kind {kind!r}; known: {', '.join(KINDS)}")
    templates = dict(representation) if not isinstance(representation, str) else {"en": representation,
                                                                                  "es": representation}
    if not {"en", "es"} <= set(templates):
        raise ValueError(f"a representation needs an 'en' and an 'es' template, got {sorted(templates)}")

    def decorate(cls: C) -> C:
        registered = name or cls.__name__
        existing = _REGISTRY.get(registered)
        if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"component name {registered!r} is registered twice ({existing} and {cls})")
        cls.component_name = registered
        cls.META = ComponentMeta(
            kind=kind,
            display={"en": Display(*en), "es": Display(*es)},
            icon=icon,
            category=category,
            representation=templates,
            operation=operation,
        )
        _REGISTRY[registered] = cls
        return cls

    return decorate


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # a broken plugin must not break the built-ins
            log.warning("could not load dashrag plugin %s (%s): %s", ep.name, ep.value, exc)


def get_component(name: str, path: str = "component") -> type[ConfigObject]:
    """The class registered as ``name``; an unknown name suggests the close matches."""
    _load_plugins()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        probe = name if isinstance(name, str) and len(name) <= 100 else ""  # no fuzzy match over a huge name
        close = difflib.get_close_matches(probe, list(_REGISTRY), n=3, cutoff=0.5) if probe else []
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownComponentError([ConfigIssue(path, f"unknown component {excerpt(name)}{hint}")]) from None


def all_components() -> Iterator[tuple[str, type[ConfigObject]]]:
    """Every registered component, sorted by name."""
    _load_plugins()
    yield from sorted(_REGISTRY.items())
