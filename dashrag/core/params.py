"""How a component declares its parameters: once, as a pydantic model.

From that one declaration come validation, the JSON Schema a UI draws its form
from, the defaults, and the config that ``save`` writes. Three things pydantic
does not know about are added here:

* a parameter that is itself a component (``component_field`` / ``components_field``):
  its value is ``{"component": name, "params": {...}}`` and its schema says which
  *kind* of component it accepts, so a UI can offer the matching ones;
* cross-field rules (``top_k <= k1``), declared once in ``RULES``, emitted into the
  JSON Schema under ``x-dashrag-rules`` and enforced on validation;
* UI hints, passed through as ``x-`` keys of a field's schema;
* what a plain value *means* to the outside world (``kind_field``): the name of a
  variable holding a secret, a URL requests are sent to, a path written under, a model
  read from. Declared per field, so whoever must police configs from an untrusted
  source (the service, docs/security.md) walks a validated tree by kind
  (:mod:`dashrag.core.declared`) and covers every component, present and future.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, ClassVar, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dashrag.urls import url_secret_problem

COMPONENT_KIND_KEY = "x-component-kind"
RULES_KEY = "x-dashrag-rules"
ALIASES_KEY = "x-dashrag-aliases"
PARAM_KIND_KEY = "x-dashrag-param-kind"


class ParamKind(StrEnum):
    """What a plain parameter value reaches outside the component (shown in its JSON Schema)."""

    #: the name of an environment variable holding a secret (never the secret)
    CREDENTIAL_NAME = "credential-name"
    #: a URL the component sends requests to (and, with a credential, its secret); None: no such request
    #: or the provider's own endpoint
    ENDPOINT = "endpoint"
    #: a file or folder the component writes, relative to the tree's folder
    STORAGE_PATH = "storage-path"
    #: a model's name, or a local folder the component reads its files from
    MODEL_SOURCE = "model-source"


UNSET_REACHES_KEY = "x-dashrag-unset-reaches"
DEFAULT_PORT_KEY = "x-dashrag-default-port"
#: A field kept only so older configs (DashAI's) load: a form puts it under "Advanced / compatibility".
COMPATIBILITY_KEY = "x-dashrag-compatibility"
#: The usual values of an open text field (a torch device: cpu, cuda, mps, while cuda:1 is valid too): a form
#: offers them as a list, with the value a config gives if it is another.
CHOICES_KEY = "x-dashrag-choices"


def kind_field(kind: ParamKind, default: Any = ..., *, unset_reaches: str | None = None,
               default_port: int | None = None, **field_kwargs: Any) -> Any:
    """A plain parameter whose value means ``kind`` to the world outside the component.

    ``unset_reaches``: for an endpoint that may be None, what None still reaches (an LLM without
    ``api_base`` calls its provider's own endpoint); left out, None means no request at all.
    ``default_port``: for an endpoint whose client goes to a port of its own when the URL names none
    (qdrant-client: 6333, not http's 80), that port, so the service compares the real destination.
    An endpoint's URL may hold no secret (``user:password@``, ``?password=``): every component's,
    checked once here (:meth:`ComponentParams._no_secret_in_urls`).
    """
    extra: dict[str, Any] = {PARAM_KIND_KEY: kind.value, **field_kwargs.pop("json_schema_extra", {})}
    if unset_reaches is not None:
        extra[UNSET_REACHES_KEY] = unset_reaches
    if default_port is not None:
        extra[DEFAULT_PORT_KEY] = default_port
    return Field(default, json_schema_extra=extra, **field_kwargs)


#: The most chunks a config may ask one retriever for (docs/security.md, param bounds).
TOP_K_MAX = 10_000


def top_k_field(default: int | None, description: str = "How many chunks to return.") -> Any:
    """Every retriever's ``top_k`` parameter: a positive integer up to :data:`TOP_K_MAX` (``default`` None: unset
    is allowed). The one declaration of the rule for configs; a ``top_k`` given to ``retrieve`` is held to the
    same rule, a positive integer, by :func:`dashrag.core.ask.check_top_k` (a float, a string or a boolean
    there is a QueryError, since Python code has no JSON number to be lenient about)."""
    return Field(default, ge=1, le=TOP_K_MAX, description=description)


def compatibility_field(default: Any, **field_kwargs: Any) -> Any:
    """A parameter that changes nothing a new tree needs and exists so the reference's configs load
    (``drop_source_columns``, BM25's DashAI distances): validated like any other, drawn apart by a form."""
    extra = {COMPATIBILITY_KEY: True, **field_kwargs.pop("json_schema_extra", {})}
    return Field(default, json_schema_extra=extra, **field_kwargs)


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
    same rule client-side (``{"rule": "le", "fields": ["top_k", "k1"]}``). A rule that
    JSON Schema can state (``if``/``then``) also carries that statement in ``json_schema``:
    it goes into the component schema's ``allOf``, so any standard validator enforces it.
    ``at`` is the field a violation is reported at (default: the first field).
    """

    kind: str
    fields: tuple[str, ...]
    description: str
    check: Callable[[Any], str | None]
    json_schema: Mapping[str, Any] | None = None
    at: str | None = None

    @property
    def field(self) -> str:
        """The parameter a violation is reported at (``children`` for ``children.*.params.top_k``)."""
        return (self.at or self.fields[0]).split(".")[0]

    def to_schema(self) -> dict[str, Any]:
        return {"rule": self.kind, "fields": list(self.fields), "description": self.description,
                "at": self.field, **({"in_schema": True} if self.json_schema is not None else {})}


class RuleViolation(ValueError):
    """The cross-field rules a params object breaks, each with the field it is reported at."""

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(message for _, message in problems))
        self.problems = problems


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
    #: One reference name for several fields, given as a list of their values in order
    #: (DashAI's ``ngram_range: [1, 2]`` is ``ngram_min: 1, ngram_max: 2``).
    SPLIT_ALIASES: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: Other spellings of a field's values, (spelling, value) pairs (``{"strip_accents": (("None", None),)}``):
    #: DashAI writes some nulls as the string "None"; matched by type and value, so ``0`` never matches ``False``.
    VALUE_ALIASES: ClassVar[Mapping[str, tuple[tuple[Any, Any], ...]]] = {}
    #: Fields of this component that a reference config gives inside a nested component's params
    #: (``{"vectorizer": ("norm", ...)}``: DashAI's TF-IDF vectorizer carries the TF-IDF weighting):
    #: moved up to this component before either is validated.
    FROM_NESTED: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: What a UI puts into a node it adds by hand, where the best start differs from the declared defaults
    #: (BM25: Lucene's weights, English stop words and stemming, as the ``keyword`` preset). The defaults stay
    #: what a config that leaves a field out has always meant (DashAI's configs, saved trees); this is only
    #: the form's first value (frontend_meta ``suggested``, docs/web.md).
    SUGGESTED: ClassVar[Mapping[str, Any]] = {}

    @model_validator(mode="before")
    @classmethod
    def _accept_aliases(cls, data: Any) -> Any:
        if not cls.has_reference_spellings() or not isinstance(data, dict):
            return data
        renamed, problems = cls.canonical_names(data)
        if problems:
            raise ValueError("; ".join(problems))
        return renamed

    @classmethod
    def has_reference_spellings(cls) -> bool:
        return bool(cls.ALIASES or cls.SPLIT_ALIASES or cls.VALUE_ALIASES or cls.FROM_NESTED)

    @classmethod
    def canonical_names(cls, raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """``raw`` in this model's own names and values: every alias renamed to its field, split aliases spread
        over their fields, value aliases replaced, fields given inside a nested component moved up; and the
        conflicts (a field given under two names). ``raw`` itself is never changed."""
        renamed: dict[str, Any] = {}
        written: dict[str, str] = {}
        problems: list[str] = []

        def put(name: str, value: Any, key: str) -> None:
            if name in renamed:
                first, second = sorted((written[name], key))
                problems.append(f"{first!r} and {second!r} name the same parameter; give one of them")
                return
            renamed[name], written[name] = value, key

        for key, value in raw.items():
            fields = cls.SPLIT_ALIASES.get(key)
            if fields is not None and isinstance(value, list) and len(value) == len(fields):
                for name, item in zip(fields, value):
                    put(name, item, key)
                continue
            if fields is not None:
                problems.append(f"{key} must be a list of {len(fields)} values ({', '.join(fields)})")
                continue
            put(cls.ALIASES.get(key, key), value, key)
        for field_name, lifted in cls.FROM_NESTED.items():
            nested = renamed.get(field_name)
            inner = nested.get("params") if isinstance(nested, dict) else None
            if not isinstance(nested, dict) or not isinstance(inner, dict) or not set(lifted) & set(inner):
                continue
            renamed[field_name] = {**nested, "params": {k: v for k, v in inner.items() if k not in lifted}}
            for name in lifted:
                if name in inner:
                    put(name, inner[name], f"{field_name}.params.{name}")
        for field_name, spellings in cls.VALUE_ALIASES.items():
            if field_name in renamed:
                renamed[field_name] = value_alias(renamed[field_name], spellings)
        return renamed, problems

    @model_validator(mode="after")
    def _check_rules(self) -> ComponentParams:
        problems = [(rule.field, p) for rule in self.RULES if (p := rule.check(self))]
        if problems:
            raise RuleViolation(problems)
        return self

    @model_validator(mode="after")
    def _no_secret_in_urls(self) -> ComponentParams:
        problems = [(name, problem) for name, kind in self.kinded_fields().items()
                    if kind is ParamKind.ENDPOINT and isinstance(value := getattr(self, name), str)
                    and (problem := url_secret_problem(value))]
        if problems:
            raise RuleViolation(problems)
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

    @classmethod
    def kinded_fields(cls) -> dict[str, ParamKind]:
        """``{field name: kind}`` for the plain fields declared with :func:`kind_field`."""
        found: dict[str, ParamKind] = {}
        for name, info in cls.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and PARAM_KIND_KEY in extra:
                found[name] = ParamKind(str(extra[PARAM_KIND_KEY]))
        return found

    @classmethod
    def unset_reaches(cls, name: str) -> str | None:
        """What the field's None still reaches (:func:`kind_field`), or None."""
        extra = cls.model_fields[name].json_schema_extra
        return str(extra[UNSET_REACHES_KEY]) if isinstance(extra, dict) and UNSET_REACHES_KEY in extra else None

    @classmethod
    def default_port(cls, name: str) -> int | None:
        """The port the field's client goes to when its URL names none (:func:`kind_field`), or None."""
        extra = cls.model_fields[name].json_schema_extra
        port = extra.get(DEFAULT_PORT_KEY) if isinstance(extra, dict) else None
        return port if isinstance(port, int) else None


def value_alias(value: Any, spellings: tuple[tuple[Any, Any], ...]) -> Any:
    """``value`` in the field's own spelling: the replacement of an alias of the same type and value."""
    for alias, replacement in spellings:
        if type(alias) is type(value) and alias == value:
            return replacement
    return value


class NoParams(ComponentParams):
    """For components without parameters."""
