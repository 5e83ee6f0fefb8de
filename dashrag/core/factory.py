"""The factory: JSON tree → component objects, bottom-up, after validating the whole tree.

``build_component`` is pure (no I/O): it validates, then constructs children
before parents and hands each parent its built children. Connecting the tree to a
corpus (``inject_infra``) and fitting it (``init_model``) are separate steps, done
by :func:`dashrag.api.build` or by loading a saved folder. The construction itself
is :func:`dashrag.core.component.construct` (a component built from a dict uses it
too), so this module imports ``component`` and never the other way round.
"""

from __future__ import annotations

from typing import Any, TypeVar

from dashrag.core.component import ConfigObject, construct
from dashrag.core.validation import validate_and_transform
from dashrag.errors import ConfigError

C = TypeVar("C", bound=ConfigObject)


def build_component(raw: Any, expected_kind: str | None = None) -> ConfigObject:
    """Validate ``raw`` as a whole tree, then construct it. Raises ConfigError listing every problem."""
    return construct(validate_and_transform(raw, expected_kind), raw)


def build_as(raw: Any, cls: type[C], expected_kind: str | None = None) -> C:
    """``build_component`` for a caller that needs one class of component (a ``Chunker``, a
    ``Retriever``): typed as that class, and a ConfigError naming what was built otherwise."""
    built = build_component(raw, expected_kind)
    if not isinstance(built, cls):
        raise ConfigError(f"{built.component_name} is not a {cls.__name__}")
    return built
