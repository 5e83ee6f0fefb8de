"""Component names → classes, plus the UI metadata registered with each.

A component registers itself when its module is imported (``@register``). Importing
``dashrag`` imports no component module: the generated index
``dashrag/component_index.py`` (``name → module``, written by ``dashrag
export-schemas`` from :data:`BUILTIN_MODULES`, checked by tests/core/test_schema.py)
lets :func:`get_component` import only the module of the name it is asked for, so a
keyword tree never pays for scikit-learn's TF-IDF, torch or litellm. Listing every
component (:func:`all_components`) imports them all. Third-party packages add theirs
through the entry-point group ``dashrag.components`` (each entry point names a module
or class whose import registers components), loaded once, when a name is in neither
the registry nor the index.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, TypeVar

from dashrag.errors import ConfigIssue, UnknownComponentError, excerpt

if TYPE_CHECKING:
    from dashrag.core.component import ConfigObject

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "dashrag.components"
BUILTIN_MODULES = "dashrag.builtin"  # imports every built-in component module: the source of the index
INDEX_MODULE = "dashrag.component_index"  # generated: INDEX = {name: module}
KINDS = ("retriever", "embedding", "vectorizer", "llm", "prompt", "credential", "chunker", "reranker",
         "vector_index", "keyword_index")


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
#: Other names of registered components (the reference's class names): alias → registered name.
_ALIASES: dict[str, str] = {}
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
    aliases: tuple[str, ...] = (),
) -> Callable[[C], C]:
    """Class decorator: register a component under ``name`` (default: the class name).

    ``en`` and ``es`` are ``(display name, one-line description)``; every component
    has both so the UI never shows a half-translated form. ``representation`` is a
    template per language (en and es at least), or one template for every language.
    ``aliases`` are other names a config may give the component (DashAI's class names); a
    validated config names it by its registered name.
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
        for alias in aliases:
            _ALIASES[alias] = registered
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


def builtin_index() -> dict[str, str]:
    """``{component name: module}`` of the built-in components, from the generated index
    (empty while it has not been generated yet: then every lookup imports them all)."""
    try:
        return dict(importlib.import_module(INDEX_MODULE).INDEX)
    except ImportError:
        return {}


def _load_builtins() -> None:
    importlib.import_module(BUILTIN_MODULES)


def canonical_name(name: str) -> str:
    """The registered name ``name`` stands for (itself, unless it is an alias)."""
    return _ALIASES.get(name, name)


def aliases_of(name: str) -> list[str]:
    """The other names of the component registered as ``name``, sorted."""
    return sorted(alias for alias, target in _ALIASES.items() if target == name)


def get_component(name: str, path: str = "component") -> type[ConfigObject]:
    """The class registered as ``name`` (or of which ``name`` is an alias), importing only its module;
    an unknown name suggests the close matches."""
    if isinstance(name, str) and canonical_name(name) not in _REGISTRY:
        module = builtin_index().get(name)
        if module is not None:
            importlib.import_module(module)
        if canonical_name(name) not in _REGISTRY:
            _load_plugins()
        if canonical_name(name) not in _REGISTRY:  # a stale or missing index must not hide a built-in
            _load_builtins()
    try:
        return _REGISTRY[canonical_name(name)]
    except (KeyError, TypeError):
        probe = name if isinstance(name, str) and len(name) <= 100 else ""  # no fuzzy match over a huge name
        names = sorted(set(_REGISTRY) | set(_ALIASES) | set(builtin_index()))
        close = similar_names(probe, names)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownComponentError([ConfigIssue(path, f"unknown component {excerpt(name)}{hint}")]) from None


def similar_names(probe: str, names: list[str]) -> list[str]:
    """Up to three names a mistyped one may mean: those it begins (``BM25`` → ``BM25Retriever``, any case)
    first, then difflib's close matches."""
    if not probe:
        return []
    begun = [n for n in names if n.lower().startswith(probe.lower())]
    return list(dict.fromkeys(begun + difflib.get_close_matches(probe, names, n=3, cutoff=0.5)))[:3]


def all_components() -> Iterator[tuple[str, type[ConfigObject]]]:
    """Every registered component, sorted by name (imports every component module)."""
    _load_builtins()
    _load_plugins()
    yield from sorted(_REGISTRY.items())


def render_index() -> str:
    """The text of ``dashrag/component_index.py``: every built-in component's module.

    Only classes defined in ``dashrag`` modules are listed (a plugin is found through
    its entry point). Regenerate with ``dashrag export-schemas`` whenever a component is
    added, renamed or moved; a test fails while the file is stale.
    """
    _load_builtins()
    index = {name: cls.__module__ for name, cls in sorted(_REGISTRY.items()) if cls.__module__.startswith("dashrag.")}
    index.update({alias: index[target] for alias, target in _ALIASES.items() if target in index})
    index = dict(sorted(index.items()))
    lines = [f"    {name!r}: {module!r},".replace("'", '"') for name, module in index.items()]
    return ('"""Generated by `dashrag export-schemas` (dashrag.core.registry.render_index): do not edit.\n\n'
            "Maps each built-in component name to the module that registers it, so a lookup\n"
            'imports only that module. On a merge conflict, rerun `dashrag export-schemas`.\n"""\n\n'
            "INDEX: dict[str, str] = {\n" + "\n".join(lines) + "\n}\n")
