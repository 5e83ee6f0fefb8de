"""The factory: JSON tree → component objects, bottom-up, after validating the whole tree.

``build_component`` is pure (no I/O): it validates, then constructs children
before parents and hands each parent its built children. Connecting the tree to a
corpus (``inject_infra``) and fitting it (``init_model``) are separate steps, done
by :func:`dashrag.api.build` or by loading a saved folder.
"""

from __future__ import annotations

from typing import Any

from dashrag.core.component import ConfigObject
from dashrag.core.registry import get_component
from dashrag.core.validation import validate_and_transform


def _raw_params(raw: Any, cls: type[ConfigObject]) -> dict[str, Any]:
    """The params as the user wrote them (aliases renamed), or {} where a default filled the node in."""
    params = raw.get("params") if isinstance(raw, dict) else None
    return cls.SCHEMA.canonical_names(params)[0] if isinstance(params, dict) else {}


def _construct(node: dict[str, Any], raw: Any = None) -> ConfigObject:
    cls = get_component(node["component"])
    params = dict(node["params"])
    given = _raw_params(raw, cls)
    nested: dict[str, Any] = {}
    for field_name, (_, is_list) in cls.SCHEMA.component_fields().items():
        value = params[field_name]
        if value is None:
            continue  # an optional component that is not configured
        raw_value = given.get(field_name)
        if is_list:
            raw_items = raw_value if isinstance(raw_value, list) else []
            nested[field_name] = [_construct(v, raw_items[i] if i < len(raw_items) else None)
                                  for i, v in enumerate(value)]
        else:
            nested[field_name] = _construct(value, raw_value)
    built = cls(cls.SCHEMA.model_validate(params), nested=nested)
    built.set_trace_params(raw.get("params", {}) if isinstance(raw, dict) else {})
    return built


def build_component(raw: Any, expected_kind: str | None = None) -> ConfigObject:
    """Validate ``raw`` as a whole tree, then construct it. Raises ConfigError listing every problem."""
    return _construct(validate_and_transform(raw, expected_kind), raw)
