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


def _construct(node: dict[str, Any]) -> ConfigObject:
    cls = get_component(node["component"])
    params = dict(node["params"])
    nested: dict[str, Any] = {}
    for field_name, (_, is_list) in cls.SCHEMA.component_fields().items():
        value = params[field_name]
        if value is None:
            continue  # an optional component that is not configured
        nested[field_name] = [_construct(v) for v in value] if is_list else _construct(value)
    return cls(cls.SCHEMA.model_validate(params), nested=nested)


def build_component(raw: Any, expected_kind: str | None = None) -> ConfigObject:
    """Validate ``raw`` as a whole tree, then construct it. Raises ConfigError listing every problem."""
    return _construct(validate_and_transform(raw, expected_kind))
