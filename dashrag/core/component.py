"""``ConfigObject``: the base of every component.

A component is its validated params (one pydantic model, ``SCHEMA``) plus the
components nested in them. Everything a tool needs is derived from those two
things, never written twice: ``to_config()`` is the inverse of building, the JSON
Schema comes from ``SCHEMA``, the summary and representation read the params.

Lifecycle (DESIGN.md): construct (pure) → ``inject_infra`` → ``init_model`` (fit)
or ``load_state`` (from a saved folder) → use → ``save_state`` → ``close``. The
tree-walking parts live here; a component overrides only its own step
(``_fit``, ``_save``, ``_load``, ``_close``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Iterator, TypeVar

from dashrag.core.params import ComponentParams, NoParams
from dashrag.core.registry import get_component
from dashrag.core.validation import validate_and_transform
from dashrag.errors import RetrievalError

if TYPE_CHECKING:
    from dashrag.core.infra import Infra
    from dashrag.core.registry import ComponentMeta

P = TypeVar("P", bound=ComponentParams)
PLACEHOLDER = re.compile(r"\{([\w.]+)\}")  # {param} or {nested.param}; an unknown one stays visible


class ConfigObject(Generic[P]):
    SCHEMA: ClassVar[type[ComponentParams]] = NoParams
    META: ClassVar[ComponentMeta]
    component_name: ClassVar[str]

    def __init__(self, params: P | dict[str, Any] | None = None, *, nested: dict[str, Any] | None = None):
        """Build from params; nested components are built from their specs unless given.

        ``BM25Retriever({"k1": 1.2})`` validates the whole subtree like a JSON config would.
        """
        if not isinstance(params, ComponentParams) or nested is None:
            raw = params.model_dump(mode="json") if isinstance(params, ComponentParams) else (params or {})
            built = construct(validate_and_transform({"component": self.component_name, "params": raw}))
            params, nested = built.params, built.nested
        self.params: P = params  # type: ignore[assignment]
        self.nested: dict[str, Any] = nested
        self.infra: Infra | None = None

    # -- tree --------------------------------------------------------------
    def nested_objects(self) -> Iterator[tuple[str, ConfigObject]]:
        """(relative path, component) for each directly nested component, in field order."""
        for field_name, value in self.nested.items():
            if isinstance(value, list):
                for i, child in enumerate(value):
                    yield f"{field_name}[{i}]", child
            else:
                yield field_name, value

    def iter_nodes(self, path: str = "root") -> Iterator[tuple[str, ConfigObject]]:
        """Every node of the tree, depth first, with a stable path (``root.children[0]``)."""
        yield path, self
        for rel, child in self.nested_objects():
            yield from child.iter_nodes(f"{path}.{rel}")

    def own_params(self) -> dict[str, Any]:
        """The params that are not components (what a trace and a summary show); a fresh dict."""
        if self.__dict__.get("_own_params_of") is not self.params:  # params are replaced, never mutated
            self._own_params_of = self.params
            self._own_params = self.params.model_dump(mode="json", exclude=set(self.SCHEMA.component_fields()))
        return dict(self._own_params)

    def to_config(self) -> dict[str, Any]:
        """The JSON this component is built from: ``build(obj.to_config())`` rebuilds it."""
        params = self.own_params()
        for field_name in self.SCHEMA.component_fields():
            params[field_name] = None  # optional components that are not configured
        for field_name, value in self.nested.items():
            params[field_name] = [c.to_config() for c in value] if isinstance(value, list) else value.to_config()
        ordered = {name: params[name] for name in self.SCHEMA.model_fields if name in params}
        return {"component": self.component_name, "params": ordered}

    # -- lifecycle ---------------------------------------------------------
    def inject_infra(self, infra: Infra) -> None:
        for _, child in self.nested_objects():
            child.inject_infra(infra)
        self.infra = infra

    def init_model(self) -> None:
        """Fit the whole subtree from the injected infrastructure, children first."""
        for _, child in self.nested_objects():
            child.init_model()
        self._fit()

    def save_state(self, folder: Path) -> None:
        """Write this node's fitted state (``.npy``/``.json`` only) into ``folder``."""
        self._save(folder)

    def load_state(self, folder: Path) -> None:
        """Restore this node's fitted state from ``folder``, never refitting."""
        self._load(folder)

    def close(self) -> None:
        """Release what this node holds, then its children."""
        self._close()
        for _, child in self.nested_objects():
            child.close()

    def _fit(self) -> None:
        """Override to fit from ``self.infra``; the default has nothing to fit."""

    def _save(self, folder: Path) -> None:
        """Override to write fitted state; the default has none."""

    def _load(self, folder: Path) -> None:
        """Override to read fitted state; the default has none."""

    def _close(self) -> None:
        """Override to release resources."""

    def require_infra(self) -> Infra:
        if self.infra is None:
            raise RetrievalError(
                f"{self.component_name}: no corpus injected yet (call inject_infra, or use dashrag.build)"
            )
        return self.infra

    # -- UI ----------------------------------------------------------------
    def get_schema_summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = {"class": self.component_name, "params": self.own_params()}
        nested = {}
        for field_name, value in self.nested.items():
            nested[field_name] = (
                [c.get_schema_summary() for c in value] if isinstance(value, list) else value.get_schema_summary()
            )
        if "children" in nested:
            summary["children"] = nested.pop("children")
        summary.update(nested)
        return summary

    def get_metadata(self) -> dict[str, Any]:
        return {"component": self.component_name, **self.META.to_json()}

    def get_representation(self) -> str:
        """The registered template filled from this node's params (``{vectorizer.ngram_max}`` works)."""
        values = _flatten(self.to_config()["params"])
        return PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), self.META.representation)


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "component" in value and "params" in value:
            flat[name] = value["component"]
            flat.update(_flatten(value["params"], f"{name}."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) and "component" in v for v in value):
            flat[name] = ", ".join(v["component"] for v in value)
        else:
            flat[name] = value
    return flat


def construct(node: dict[str, Any]) -> ConfigObject:
    """Build a validated tree (``validate_and_transform``'s output) bottom-up: children
    before parents, each parent handed its built children. Pure: no I/O, no fitting."""
    cls = get_component(node["component"])
    params = dict(node["params"])
    nested: dict[str, Any] = {}
    for field_name, (_, is_list) in cls.SCHEMA.component_fields().items():
        value = params[field_name]
        if value is None:
            continue  # an optional component that is not configured
        nested[field_name] = [construct(v) for v in value] if is_list else construct(value)
    return cls(cls.SCHEMA.model_validate(params), nested=nested)
