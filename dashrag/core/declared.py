"""Every value of a declared kind in a validated tree, with its JSON path.

A component declares what a plain parameter means outside it (:class:`~dashrag.core.params.ParamKind`:
a credential's variable name, an endpoint URL, a storage path, a model source) once, in its params
(:func:`~dashrag.core.params.kind_field`). :func:`declared_values` walks a tree that
:func:`~dashrag.core.validation.validate_and_transform` returned (defaults filled in, so a value the
config left out is seen too) and yields each such value, whatever component holds it. A policy over
configs from an untrusted source (the service's, docs/security.md) is then a function of kind and
value, never a list of component names that a new component would slip past.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from dashrag.core.params import ParamKind
from dashrag.core.registry import get_component
from dashrag.core.validation import join_path


@dataclass(frozen=True)
class DeclaredValue:
    path: str  #: where in the config, as validation errors name it (``params.children[0].params.api_base``)
    kind: ParamKind
    value: Any
    component: str
    unset_reaches: str | None = None  #: an endpoint's: what None still reaches (``kind_field``)


def declared_values(tree: dict[str, Any]) -> Iterator[DeclaredValue]:
    """The declared values of a normalised tree, depth first (iteratively: a tree is at most 32 deep anyway)."""
    stack: list[tuple[dict[str, Any], str]] = [(tree, "")]
    while stack:
        node, path = stack.pop()
        schema = get_component(node["component"]).SCHEMA
        params, params_path = node.get("params", {}), join_path(path, "params")
        for name, kind in schema.kinded_fields().items():
            yield DeclaredValue(join_path(params_path, name), kind, params.get(name), node["component"],
                                schema.unset_reaches(name))
        for name, (_, is_list) in schema.component_fields().items():
            value = params.get(name)
            children = value if is_list else [value]
            for i, child in enumerate(children or []):
                if isinstance(child, dict):
                    where = join_path(join_path(params_path, name), i) if is_list else join_path(params_path, name)
                    stack.append((child, where))
