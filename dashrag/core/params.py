"""How a component declares its parameters: once, as a pydantic model.

From that one declaration come validation, the JSON Schema a UI draws its form
from, the defaults, and the config that ``save`` writes. Three things pydantic
does not know about are added here:

* a parameter that is itself a component (``component_field`` / ``components_field``):
  its value is ``{"component": name, "params": {...}}`` and its schema says which
  *kind* of component it accepts, so a UI can offer the matching ones;
* cross-field rules (``top_k <= k1``), declared once in ``RULES``, emitted into the
  JSON Schema under ``x-dashrag-rules`` and enforced on validation;
* UI hints, passed through as ``x-`` keys of a field's schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

COMPONENT_KIND_KEY = "x-component-kind"
RULES_KEY = "x-dashrag-rules"
ALIASES_KEY = "x-dashrag-aliases"


class ComponentSpec(BaseModel):
    """A reference to a component inside a config tree: its registered name and its params."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    component: str = Field(description="Registered name of the component.")
    params: dict[str, Any] = Field(default_factory=dict, description="The component's parameters.")


def spec(component: str, **params: Any) -> ComponentSpec:
    """Shorthand for defaults: ``spec("BagOfWordsConverter", lowercase=True)``."""
    return ComponentSpec(component=component, params=params)


def component_field(kind: str, default: ComponentSpec | None, optional: bool = False, **field_kwargs: Any) -> Any:
    """A parameter holding one component of ``kind`` (retriever, embedding, vectorizer, ...).

    ``default=None`` makes it required, unless ``optional`` (then None means "no such
    component": annotate the field ``ComponentSpec | None``).
    """
    extra = {COMPONENT_KIND_KEY: kind, **field_kwargs.pop("json_schema_extra", {})}
    if default is None:
        return (
            Field(None, json_schema_extra=extra, **field_kwargs)
            if optional
            else Field(json_schema_extra=extra, **field_kwargs)
        )
    return Field(default_factory=lambda: default.model_copy(), json_schema_extra=extra, **field_kwargs)


def components_field(kind: str, default: Sequence[ComponentSpec] | None, **field_kwargs: Any) -> Any:
    """A parameter holding a list of components of ``kind`` (the children of a composite)."""
    extra = {COMPONENT_KIND_KEY: kind, "x-component-list": True, **field_kwargs.pop("json_schema_extra", {})}
    if default is None:
        return Field(json_schema_extra=extra, **field_kwargs)
    items = list(default)
    return Field(default_factory=lambda: [s.model_copy() for s in items], json_schema_extra=extra, **field_kwargs)


@dataclass(frozen=True)
class Rule:
    """A cross-field rule: ``check(params)`` returns ``None`` when it holds, else the problem.

    ``kind`` and ``fields`` are what the JSON Schema shows, so a UI can enforce the
    same rule client-side (``{"rule": "le", "fields": ["top_k", "k1"]}``).
    """

    kind: str
    fields: tuple[str, ...]
    description: str
    check: Callable[[Any], str | None]

    def to_schema(self) -> dict[str, Any]:
        return {"rule": self.kind, "fields": list(self.fields), "description": self.description}


def less_or_equal(smaller: str, larger: str) -> Rule:
    """``params.<smaller> <= params.<larger>`` (either may be ``None``, which passes)."""

    def check(params: Any) -> str | None:
        a, b = getattr(params, smaller), getattr(params, larger)
        if a is not None and b is not None and a > b:
            return f"{smaller} ({a}) must be <= {larger} ({b})"
        return None

    return Rule("le", (smaller, larger), f"{smaller} must not exceed {larger}", check)


def same_length(optional_list: str, reference_list: str) -> Rule:
    """``len(params.<optional_list>) == len(params.<reference_list>)`` when the first is set."""

    def check(params: Any) -> str | None:
        a, b = getattr(params, optional_list), getattr(params, reference_list)
        if a is not None and len(a) != len(b):
            return f"{optional_list} has {len(a)} entries but there are {len(b)} {reference_list}"
        return None

    return Rule(
        "same_length",
        (optional_list, reference_list),
        f"{optional_list}, when given, has one entry per item of {reference_list}",
        check,
    )


class ComponentParams(BaseModel):
    """Base of every component's parameter model.

    Unknown keys are errors (a typo in a config must not silently fall back to a
    default), and every rule in ``RULES`` is checked after the fields validate.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True, allow_inf_nan=False)

    RULES: ClassVar[tuple[Rule, ...]] = ()
    #: Other names a config may give a field (``{"lower_bound_ngrams": "ngram_min"}``): the names the
    #: reference implementation uses, accepted on input and written back under the field's own name.
    ALIASES: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _accept_aliases(cls, data: Any) -> Any:
        if not cls.ALIASES or not isinstance(data, dict):
            return data
        renamed, problems = cls.canonical_names(data)
        if problems:
            raise ValueError("; ".join(problems))
        return renamed

    @classmethod
    def canonical_names(cls, raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """``raw`` with every alias renamed to its field, and the conflicts (a field given under two names)."""
        renamed: dict[str, Any] = {}
        written: dict[str, str] = {}
        problems: list[str] = []
        for key, value in raw.items():
            name = cls.ALIASES.get(key, key)
            if name in renamed:
                first, second = sorted((written[name], key))
                problems.append(f"{first!r} and {second!r} name the same parameter; give one of them")
                continue
            renamed[name], written[name] = value, key
        return renamed, problems

    @model_validator(mode="after")
    def _check_rules(self) -> ComponentParams:
        problems = [p for rule in self.RULES if (p := rule.check(self))]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @classmethod
    def component_fields(cls) -> dict[str, tuple[str, bool]]:
        """``{field name: (accepted kind, is a list)}`` for the fields that hold components."""
        found: dict[str, tuple[str, bool]] = {}
        for name, info in cls.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and COMPONENT_KIND_KEY in extra:
                found[name] = (str(extra[COMPONENT_KIND_KEY]), bool(extra.get("x-component-list")))
        return found


class NoParams(ComponentParams):
    """For components without parameters."""
