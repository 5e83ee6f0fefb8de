"""Whole-tree validation: every problem, each with its JSON path, before anything is built.

``validate_and_transform`` walks a raw ``{"component": ..., "params": ...}`` tree,
validates each node's params with its pydantic ``SCHEMA``, recurses into the fields
that hold components (checking each is of the accepted kind), and returns the
*normalised* tree: every default filled in, so a saved config states exactly what
ran. It raises one :class:`ConfigError` listing all issues, never just the first.

Values come from JSON, so they are validated the way JSON means them (pydantic's
strict mode on JSON input): ``true`` is not a ``top_k``, ``"5"`` is not a number,
and no number anywhere in a config may be ``NaN`` or infinite (``1e400``).

**Depth limits** (documented in docs/reliability.md): a config is at most
:data:`MAX_JSON_DEPTH` JSON levels deep, and a tree at most
:data:`MAX_COMPONENT_DEPTH` components deep. Both are checked before anything
recurses, so a hostile config is one ConfigError, never a RecursionError.
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from dashrag.core.params import ParamKind, RuleViolation
from dashrag.core.registry import get_component
from dashrag.errors import ConfigError, ConfigIssue, RuleIssue, UnknownComponentError, excerpt

#: ``screen(path, kind, value)``: why a declared value may not even be looked at, or None (validate_and_transform).
Screen = Callable[[str, ParamKind, Any], "str | None"]

NODE_KEYS = {"component", "params"}
#: The deepest tree of components a config may hold (a composite inside a composite ... 32 times).
MAX_COMPONENT_DEPTH = 32
#: The deepest JSON nesting a config may have (each component level takes three: node, params, list).
MAX_JSON_DEPTH = 3 * MAX_COMPONENT_DEPTH + 32
#: The most problems one ConfigError lists (a config with 10,000 bad entries is still one readable line).
MAX_ISSUES = 20
KEY_CHARS = 60


def join_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = key if len(key) <= KEY_CHARS else f"{key[:KEY_CHARS]}…"
    return f"{path}.{key}" if path else key


def json_issues(raw: Any) -> list[ConfigIssue]:
    """Problems of the JSON value itself, found without recursion: too deep, a non-finite number,
    a value JSON cannot hold (a Python object passed to ``build``)."""
    issues: list[ConfigIssue] = []
    stack: list[tuple[Any, str, int]] = [(raw, "", 1)]
    while stack and len(issues) < MAX_ISSUES:
        value, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            issues.append(ConfigIssue(path, f"nested more than {MAX_JSON_DEPTH} levels deep "
                                            f"(a config holds at most {MAX_COMPONENT_DEPTH} levels of components)"))
            break
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    issues.append(ConfigIssue(path, f"key {excerpt(key)} is not a string"))
                    continue
                stack.append((item, join_path(path, key), depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, join_path(path, i), depth + 1) for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            issues.append(ConfigIssue(path, f"{value} is not a finite number"))
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            issues.append(ConfigIssue(path, f"a {type(value).__name__} is not a JSON value"))
    return issues


def _pydantic_issues(error: ValidationError, path: str) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for err in error.errors():
        violation = err.get("ctx", {}).get("error")
        if isinstance(violation, RuleViolation) and not err["loc"]:
            issues.extend(RuleIssue(join_path(path, field), message) for field, message in violation.problems)
            continue
        where = path
        for key in err["loc"]:
            where = join_path(where, key)
        message = err["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, "):]
        issues.append(ConfigIssue(where, message))
    return issues


PLACEHOLDER = {"component": "<invalid>", "params": {}}
#: DashAI's tree builder writes a nested composite's children beside its params: ``{component, params, children}``.
CHILDREN_BESIDE_PARAMS = "children"


def _children_into_params(raw: dict, params: dict, cls: Any, path: str, issues: list[ConfigIssue]) -> dict:
    """``params`` with the node's ``children`` (given beside ``params``) moved in, for a component that has
    children; a node giving them in both places, or a component without children given some, is an issue."""
    if CHILDREN_BESIDE_PARAMS not in raw:
        return params
    where = join_path(path, CHILDREN_BESIDE_PARAMS)
    if CHILDREN_BESIDE_PARAMS not in cls.SCHEMA.component_fields():
        issues.append(ConfigIssue(where, f"unexpected key 'children'; {cls.component_name} has no children"))
        return params
    if params.get(CHILDREN_BESIDE_PARAMS):  # an empty list there is the form's placeholder, not children
        issues.append(ConfigIssue(where, "children are given both beside params and in params.children; give one"))
        return params
    return {**params, CHILDREN_BESIDE_PARAMS: raw[CHILDREN_BESIDE_PARAMS]}


def _takes_integer_only(annotation: Any) -> bool:
    """An int field (``int``, ``int | None``, a Literal of ints is not one): where a whole float means that int."""
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    return int in options and float not in options


def whole_numbers_as_integers(params: dict, schema: Any) -> dict:
    """``params`` with a whole float (``5.0``) given for an integer field read as that integer, as JSON Schema's
    ``integer`` reads it (so the published schema and validation accept the same values); ``5.5`` stays an error."""
    fixed = dict(params)
    for name, info in schema.model_fields.items():
        value = fixed.get(name)
        if type(value) is float and value.is_integer() and _takes_integer_only(info.annotation):
            fixed[name] = int(value)
    return fixed


def _accepts_none(schema: Any, field_name: str) -> bool:
    return not schema.model_fields[field_name].is_required() and schema.model_fields[field_name].default is None


def _replace_failed(params: dict, schema: Any) -> bool:
    """Stand a placeholder in for each nested node that failed, so the parent's own params
    (and rules over them) are still validated and reported; True if any failed."""
    failed = False
    for field_name, (_, is_list) in schema.component_fields().items():
        if field_name not in params:
            continue
        if params[field_name] is None and not is_list and _accepts_none(schema, field_name):
            continue  # an optional component left unset
        values = params[field_name] if is_list else [params[field_name]]
        if any(v is None for v in values):
            failed = True
            fixed = [PLACEHOLDER if v is None else v for v in values]
            params[field_name] = fixed if is_list else fixed[0]
    return failed


def no_screen(path: str, kind: ParamKind, value: Any) -> str | None:
    """The screen of a config its own author wrote: every declared value may be looked at."""
    return None


def _validate_node(raw: Any, path: str, expected_kind: str | None, issues: list[ConfigIssue],
                   depth: int = 1, screen: Screen = no_screen) -> dict | None:
    if not isinstance(raw, dict):
        issues.append(
            ConfigIssue(path, f'expected an object {{"component": ..., "params": ...}}, got {type(raw).__name__}')
        )
        return None
    if depth > MAX_COMPONENT_DEPTH:
        issues.append(ConfigIssue(path, f"components nested more than {MAX_COMPONENT_DEPTH} deep"))
        return None
    unknown = sorted(set(raw) - NODE_KEYS - {CHILDREN_BESIDE_PARAMS})
    for key in unknown[:5]:  # each at its own path, as the page shows it; a huge key is said, not echoed
        where = join_path(path, key) if len(key) <= KEY_CHARS else path
        issues.append(ConfigIssue(where, f"unexpected key {excerpt(key, KEY_CHARS)}; "
                                         "a node has only 'component' and 'params'"))
    if len(unknown) > 5:
        issues.append(ConfigIssue(path, f"{len(unknown) - 5} more unexpected keys"))
    name = raw.get("component")
    if not isinstance(name, str):
        issues.append(ConfigIssue(join_path(path, "component"), "missing or not a string"))
        return None
    try:
        cls = get_component(name, join_path(path, "component"))
    except UnknownComponentError as exc:
        issues.extend(exc.issues)
        return None
    kind = cls.META.kind
    if expected_kind is not None and kind != expected_kind:
        issues.append(
            ConfigIssue(join_path(path, "component"), f"{name!r} is a {kind}, but a {expected_kind} is expected here")
        )
        return None
    params = raw.get("params", {})
    params_path = join_path(path, "params")
    if not isinstance(params, dict):
        issues.append(ConfigIssue(params_path, f"expected an object, got {type(params).__name__}"))
        return None
    params = _children_into_params(raw, params, cls, path, issues)

    schema = cls.SCHEMA
    spelled = {schema.ALIASES.get(key, key): key for key in params}  # paths name a field as the user wrote it
    params, conflicts = schema.canonical_names(params)  # reference names (ALIASES) → the fields' own names
    issues.extend(ConfigIssue(params_path, problem) for problem in conflicts)
    for field_name, (field_kind, is_list) in schema.component_fields().items():
        if field_name not in params:
            continue  # the default spec is validated below, once filled in
        value = params[field_name]
        field_path = join_path(params_path, spelled.get(field_name, field_name))
        if is_list:
            if not isinstance(value, list):
                issues.append(
                    ConfigIssue(field_path, f"expected a list of {field_kind} components, got {type(value).__name__}")
                )
                params[field_name] = [None]  # failed: a placeholder stands in (_replace_failed)
                continue
            params[field_name] = [_validate_node(v, join_path(field_path, i), field_kind, issues, depth + 1, screen)
                                  for i, v in enumerate(value)]
        elif value is not None or not _accepts_none(schema, field_name):
            params[field_name] = _validate_node(value, field_path, field_kind, issues, depth + 1, screen)

    failed_nested = _replace_failed(params, schema)
    params = whole_numbers_as_integers(params, schema)
    try:
        validated = schema.model_validate_json(json.dumps(params), strict=True)  # as JSON means it
    except ValidationError as exc:
        issues.extend(_pydantic_issues(exc, params_path))
        return None
    if failed_nested:
        return None  # the parent's own params were still checked above
    screened = [ConfigIssue(join_path(params_path, name), problem) for name, kind in schema.kinded_fields().items()
                if (problem := screen(join_path(params_path, name), kind, getattr(validated, name)))]
    if screened:  # refused before availability_problem looks for the model on this machine
        issues.extend(screened)
        return None
    unavailable = cls.availability_problem(validated)
    if unavailable:
        issues.append(ConfigIssue(params_path, unavailable))
        return None

    normalised = validated.model_dump(mode="json")
    for field_name, (field_kind, is_list) in schema.component_fields().items():
        if field_name in params:
            normalised[field_name] = params[field_name]
            continue
        default = normalised[field_name]  # a default spec: fill in its own defaults
        field_path = join_path(params_path, field_name)
        if default is None:
            continue
        if is_list:
            normalised[field_name] = [_validate_node(v, join_path(field_path, i), field_kind, issues, depth + 1, screen)
                                      for i, v in enumerate(default)]
        else:
            normalised[field_name] = _validate_node(default, field_path, field_kind, issues, depth + 1, screen)
    return {"component": cls.component_name, "params": normalised}  # an alias is saved as the registered name


def validate_and_transform(raw: Any, expected_kind: str | None = None, screen: Screen = no_screen) -> dict:
    """Validate a whole config tree; return it normalised, or raise listing every problem.

    ``screen`` sees each node's declared values (:func:`~dashrag.core.params.kind_field`) once its params
    are valid and *before* :meth:`availability_problem` looks on this machine for what they name; a
    value it refuses is an issue at its path and the machine is not looked at (the service refuses a
    client's model folder outside the data root unread: docs/security.md)."""
    issues = json_issues(raw)
    result = None if issues else _validate_node(raw, "", expected_kind, issues, screen=screen)
    if issues or result is None:
        issues = (issues or [ConfigIssue("", "invalid config")])[:MAX_ISSUES]
        unknown = any("unknown component" in i.message for i in issues)
        raise (UnknownComponentError if unknown else ConfigError)(issues)
    return result
