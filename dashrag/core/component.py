"""``ConfigObject``: the base of every component.

A component is its validated params (one pydantic model, ``SCHEMA``) plus the
components nested in them. Everything a tool needs is derived from those two
things, never written twice: ``to_config()`` is the inverse of building, the JSON
Schema comes from ``SCHEMA``, the summary and representation read the params.

Lifecycle (docs/design.md): construct (pure) → ``inject_infra`` → ``init_model`` (fit)
or ``load_state`` (from a saved folder) → use → ``save_state`` → ``close``. The
tree-walking parts live here; a component overrides only its own step
(``_fit``, ``_save``, ``_load``, ``_close``).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Iterator, Sequence, TypeVar, get_args

from dashrag.core.params import ComponentParams, NoParams
from dashrag.core.registry import get_component
from dashrag.core.validation import validate_and_transform
from dashrag.errors import ConfigError, CredentialError, RetrievalError

if TYPE_CHECKING:
    from dashrag.core.infra import Infra
    from dashrag.core.registry import ComponentMeta
    from dashrag.documents.changes import CorpusChange

P = TypeVar("P", bound=ComponentParams)
PLACEHOLDER = re.compile(r"\{([\w.]+)\}")  # {param} or {nested.param}; an unknown one stays visible


def params_argument(cls: type) -> type[ComponentParams] | None:
    """The params model ``cls`` names as its generic parameter (``Base[XParams]``), if it names one."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        for arg in get_args(base)[:1]:
            if isinstance(arg, type) and issubclass(arg, ComponentParams):
                return arg
    return None


class ConfigObject(Generic[P]):
    # The params model, derived from the generic parameter: ``class BM25Retriever(UnitRetriever[BM25Params])``
    # has ``SCHEMA = BM25Params`` (``__init_subclass__``); a subclass naming none inherits its base's.
    SCHEMA: ClassVar[type[ComponentParams]] = NoParams
    META: ClassVar[ComponentMeta]
    component_name: ClassVar[str]
    # Optional libraries this node's save imports (a sentence-transformers model's ONNX export: onnxruntime).
    # build_tree looks for them before it chunks and fits, so a missing one fails a build in a second, naming
    # its extra, not after the corpus was embedded (missing_module_to_save).
    SAVE_IMPORTS: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        derived = params_argument(cls)
        if derived is None:
            return
        declared = cls.__dict__.get("SCHEMA")
        if declared is not None and declared is not derived:
            raise TypeError(f"{cls.__name__}: SCHEMA = {declared.__name__} contradicts its generic parameter "
                            f"{derived.__name__}; drop the SCHEMA line (it is derived)")
        cls.SCHEMA = derived

    def __init__(self, params: P | dict[str, Any] | None = None, *, nested: dict[str, Any] | None = None):
        """Build from params; nested components are built from their specs unless given.

        ``BM25Retriever({"k1": 1.2})`` validates the whole subtree like a JSON config would.
        """
        self.trace_params: dict[str, Any] = {}
        if not isinstance(params, ComponentParams) or nested is None:
            raw = params.model_dump(mode="json") if isinstance(params, ComponentParams) else (params or {})
            node = {"component": self.component_name, "params": raw}
            built = construct(validate_and_transform(node), node)
            params, nested = built.params, built.nested
            self.set_trace_params(raw)
        self.params: P = params  # type: ignore[assignment]
        self.nested: dict[str, Any] = nested
        self.infra: Infra | None = None

    def set_trace_params(self, params: dict[str, Any]) -> None:
        """Keep a deep copy of the raw params this node was constructed from (as the user wrote them,
        before defaults and aliases), so what was asked for can be shown beside what ran."""
        self.trace_params = copy.deepcopy(dict(params))

    @classmethod
    def availability_problem(cls, params: Any) -> str | None:
        """Why valid ``params`` cannot run on this machine (a model's weights are missing), or None.

        Validation reports it at the node's path, so a tree fails before anything is built."""
        return None

    @classmethod
    def needed_credentials(cls, params: Any) -> tuple[str, ...]:
        """The credential fields whose secret a run of this node with valid ``params`` cannot do without: by
        default every credential given. A component that reads one only sometimes narrows it (an LLM with its
        own ``api_base`` sends a placeholder). The service checks these variables are set before it builds
        (``core/declared.py``, docs/security.md), so a tree fails at validation, not at its first request."""
        return tuple(name for name, (kind, _) in cls.SCHEMA.component_fields().items()
                     if kind == "credential" and getattr(params, name, None) is not None)

    @classmethod
    def validate_and_transform(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """Validate ``raw`` (this component's params, or a whole ``{"component", "params"}`` node of it)
        and return the normalised node; a ConfigError lists every problem with its path."""
        node = raw if isinstance(raw, dict) and "component" in raw else {"component": cls.component_name,
                                                                         "params": raw}
        if node.get("component") != cls.component_name:
            raise ConfigError(f"component: {node.get('component')!r} given to {cls.component_name}")
        return validate_and_transform(node, cls.META.kind)

    def get_credential(self, name: str) -> ConfigObject:
        """The credential component ``name`` in this subtree, as the reference returns it: named by its class
        (``EnvCredential``), the field that holds it (``credential``) or the variable it reads
        (``OPENAI_API_KEY``). Its secret is read only when asked (``.resolve()``), never kept."""
        for path, node in self.iter_nodes(""):
            if node.META.kind != "credential":
                continue
            field = path.rsplit(".", 1)[-1]
            if name in (node.component_name, type(node).__name__, field, getattr(node.params, "var", None)):
                return node
        raise CredentialError(f"{self.component_name}: no credential named {name!r} in this tree")

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
    def inject_infra(self, infra: Infra | str | Path, chunks: Any = None, persistence: Any = None,
                     documents: Sequence[Any] | None = None) -> None:
        """Connect the subtree to its corpus: ``inject_infra(infra)``, or the reference's shape
        ``inject_infra(env_path, chunks, persistence, documents=None)`` (``chunks``: a ChunkSet or
        chunks; ``persistence``: a store URL, an object with a ``url``, or None)."""
        from dashrag.core.infra import Infra

        if not isinstance(infra, Infra):
            infra = Infra.of(infra, chunks, persistence, documents)
        elif chunks is not None or persistence is not None or documents is not None:
            raise TypeError("inject_infra takes an Infra alone, or env_path, chunks, persistence[, documents]")
        for _, child in self.nested_objects():
            child.inject_infra(infra)
        self.infra = infra

    def init_model(self) -> None:
        """Fit the whole subtree from the injected infrastructure, children first."""
        for _, child in self.nested_objects():
            child.init_model()
        self._fit()

    def apply_change(self, change: CorpusChange) -> None:
        """Bring the subtree's fitted state from ``change.old`` to ``change.new`` (the new infrastructure is
        already injected), children first, as if it had been fitted on the new corpus (docs/updating.md)."""
        for _, child in self.nested_objects():
            child.apply_change(change)
        self._update(change)

    def release_replaced(self) -> None:
        """After an update is published (saved), release what only the tree before it used (an engine's
        old collection or table), children first."""
        for _, child in self.nested_objects():
            child.release_replaced()
        self._release_replaced()

    def missing_module_to_save(self) -> str | None:
        """The first of this subtree's ``SAVE_IMPORTS`` that cannot be imported, else None."""
        from importlib.util import find_spec

        for _, node in self.iter_nodes():
            for module in node.SAVE_IMPORTS:
                if find_spec(module) is None:
                    return module
        return None

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

    def _update(self, change: CorpusChange) -> None:
        """Override to update fitted state by ``change`` for less than a refit (a dense node embeds only the
        new chunks); the default refits on the new corpus, which is exact by construction."""
        self._fit()

    def _release_replaced(self) -> None:
        """Override to release what the tree used before an update; the default holds nothing outside."""

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

    @classmethod
    def get_schema_summary_parameters(cls) -> dict[str, dict[str, Any]]:
        """Per parameter, what a form shows: its type, default and description, and for a nested
        component the kind it accepts (from the JSON Schema, so on the class)."""
        properties = cls.get_schema().get("properties", {})
        summary: dict[str, dict[str, Any]] = {}
        for name, prop in properties.items():
            entry = {key: prop[key] for key in ("type", "default", "description", "enum") if key in prop}
            if "anyOf" in prop:
                entry["type"] = [p.get("type", p.get("$ref", "object")) for p in prop["anyOf"]]
            if "x-component-kind" in prop:
                entry["component_kind"] = prop["x-component-kind"]
            summary[name] = entry
        return summary

    @classmethod
    def get_schema(cls) -> dict[str, Any]:
        """The JSON Schema (2020-12) of this component's params."""
        from dashrag.core.schema import component_schema

        return component_schema(cls)

    @classmethod
    def get_metadata(cls) -> dict[str, Any]:
        return {"component": cls.component_name, **cls.META.to_json()}

    @classmethod
    def get_representation(cls) -> dict[str, str]:
        """The multilingual template (language → text with ``{param}`` / ``{nested.param}`` placeholders);
        :meth:`render_representation` fills it in for one node."""
        return dict(cls.META.representation)

    def render_representation(self, language: str = "en") -> str:
        """The template of ``language`` (English where there is none) filled from this node's params."""
        templates = self.META.representation
        values = _flatten(self.to_config()["params"])
        template = templates.get(language, templates["en"])
        return PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)


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


def _raw_params(raw: Any, cls: type[ConfigObject]) -> dict[str, Any]:
    """The params as the user wrote them (aliases renamed), or {} where a default filled the node in."""
    params = raw.get("params") if isinstance(raw, dict) else None
    return cls.SCHEMA.canonical_names(params)[0] if isinstance(params, dict) else {}


def construct(node: dict[str, Any], raw: Any = None) -> ConfigObject:
    """Build a validated tree (``validate_and_transform``'s output) bottom-up: children
    before parents, each parent handed its built children. Pure: no I/O, no fitting.
    ``raw`` is the tree as the user wrote it: each node keeps its own part (``set_trace_params``)."""
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
            nested[field_name] = [construct(v, raw_items[i] if i < len(raw_items) else None)
                                  for i, v in enumerate(value)]
        else:
            nested[field_name] = construct(value, raw_value)
    built = cls(cls.SCHEMA.model_validate(params), nested=nested)
    raw_node_params = raw.get("params") if isinstance(raw, dict) else None
    built.set_trace_params(raw_node_params if isinstance(raw_node_params, dict) else {})
    return built
