"""The ``dashrag`` command's groups, each imported only when one of its commands runs.

Every command lives in a module of its own group (``dashrag/cli/<group>_commands.py``)
as module-level typer functions on that module's ``app`` (a ``typer.Typer``): the
commands of an unnamed ``app`` become top-level commands (``dashrag index``), a named
one is a sub-group (``dashrag pg start``). Each module can be imported and driven
alone (``CliRunner().invoke(module.app, ...)``).

``main.py`` lists the modules with the command names they provide (:class:`CommandModule`);
:class:`LazyCommands` is the click group's command table: it knows every name from that
list and imports a module the first time one of its commands is looked up. ``dashrag
query`` thereby imports the query module and none of the others (their typer
signatures, rich progress bars, the evaluation stack): a cold query is latency-bound
(bench/bench_cold_query.py). ``dashrag --help`` looks every command up, so it imports
them all, as does iterating over the table's items.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import typer

from dashrag.cli.help_text import tidy_help
from dashrag.cli.usage import OneLineErrors


@dataclass(frozen=True)
class CommandModule:
    """A command module (``dashrag.cli.index_commands``) and the top-level names its ``app`` provides."""

    module: str
    names: tuple[str, ...]

    def commands(self) -> dict[str, Any]:
        """The module's click commands by top-level name (a named sub-app is one group), help tidied."""
        sub_app = importlib.import_module(self.module).app
        holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        holder.add_typer(sub_app)  # unnamed: its commands are merged in; named: one group of that name
        found = dict(typer.main.get_group(holder).commands)
        if set(found) != set(self.names):
            raise RuntimeError(f"{self.module} provides {sorted(found)}, main.py lists {sorted(self.names)}")
        for command in found.values():
            tidy_help(command, command.context_class(command))
        return found


class LazyCommands(MutableMapping[str, Any]):
    """A click group's ``commands`` table that imports a :class:`CommandModule` when one of its names is read."""

    def __init__(self, modules: Sequence[CommandModule], loaded: Mapping[str, Any] | None = None):
        self._where = {name: module for module in modules for name in module.names}
        self._loaded: dict[str, Any] = dict(loaded or {})
        self._order = [*self._loaded, *(name for name in self._where if name not in self._loaded)]

    def loaded(self) -> dict[str, Any]:
        """The commands imported so far (help tidying touches only these)."""
        return dict(self._loaded)

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in self._where:
                raise KeyError(name)
            self._loaded.update(self._where[name].commands())
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name not in self._order:
            self._order.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._order.remove(name)
        self._loaded.pop(name, None)
        self._where.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._where


class LazyGroup(OneLineErrors):
    """The root group (one-line usage errors, :mod:`dashrag.cli.usage`) whose table is :class:`LazyCommands`
    over ``modules``; main.py names the modules in a subclass."""

    modules: Sequence[CommandModule] = ()

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.modules, self.commands)
