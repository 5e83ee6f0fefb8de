"""Every value of a declared kind in a validated tree, with its JSON path.

A component declares what a plain parameter means outside it (:class:`~dashrag.core.params.ParamKind`:
a credential's variable name, an endpoint URL, a storage path, a model source) once, in its params
(:func:`~dashrag.core.params.kind_field`). :func:`declared_values` walks a tree that
:func:`~dashrag.core.validation.validate_and_transform` returned (defaults filled in, so a value the
config left out is seen too) and yields each such value, whatever component holds it. A policy over
configs from an untrusted source (the service's, docs/security.md) is then a function of kind and
value, never a list of component names that a new component would slip past.

A credential's variable is ``required`` when a run reads it without fail: its holder says so
(:meth:`~dashrag.core.component.ConfigObject.needed_credentials`; an LLM with its own server sends a
placeholder instead), and so does every holder above it.
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
    required: bool = True  #: a credential's: a run of the tree cannot do without it (module docstring)
    default_port: int | None = None  #: an endpoint's: where its client goes when the URL names no port


def declared_values(tree: dict[str, Any]) -> Iterator[DeclaredValue]:
    """The declared values of a normalised tree, depth first (iteratively: a tree is at most 32 deep anyway)."""
    stack: list[tuple[dict[str, Any], str, bool]] = [(tree, "", True)]
    while stack:
        node, path, required = stack.pop()
        cls = get_component(node["component"])
        schema = cls.SCHEMA
        params, params_path = node.get("params", {}), join_path(path, "params")
        for name, param_kind in schema.kinded_fields().items():
            yield DeclaredValue(join_path(params_path, name), param_kind, params.get(name), node["component"],
                                schema.unset_reaches(name), required, schema.default_port(name))
        fields = schema.component_fields()
        needed = set(cls.needed_credentials(schema.model_validate(params))) \
            if any(kind == "credential" for kind, _ in fields.values()) else set()
        for name, (kind, is_list) in fields.items():
            value = params.get(name)
            children = value if is_list else [value]
            for i, child in enumerate(children or []):
                if isinstance(child, dict):
                    where = join_path(join_path(params_path, name), i) if is_list else join_path(params_path, name)
                    stack.append((child, where, required and (kind != "credential" or name in needed)))
