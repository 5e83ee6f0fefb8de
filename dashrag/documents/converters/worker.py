"""Converting files in a child process: a hung converter is stopped by the per-file timeout and a crashed
one (a segfault in a C parser) costs its file, not the folder read.

One long-lived child (spawned, never forked: the parent may hold threads, a status spinner say)
converts one file at a time; the parent waits at most ``ReadLimits.timeout_s`` for each answer.
On a timeout or a dead child the child is killed and the next file starts a fresh one. Only plain
tuples cross the pipe.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from dashrag.documents.converters import FILE_TYPES, ConversionFailed, Converted, ReadLimits


def _serve(conn: Connection, limits: dict[str, Any]) -> None:
    bounds = ReadLimits(**limits)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        path, file_type = request
        try:
            done = FILE_TYPES[file_type].convert(Path(path), bounds)
            conn.send(("ok", done.pages, done.title, done.paged))
        except ConversionFailed as exc:
            conn.send(("failed", str(exc)))
        except ImportError as exc:
            conn.send(("failed", f"reading {file_type.upper()} files needs pip install 'dashrag[documents]' "
                                 f"({exc.name} is not installed)"))
        except Exception as exc:  # a converter library's own bug on a strange file: that file's failure
            conn.send(("failed", f"cannot be converted ({type(exc).__name__}: {exc})"))


class ConversionWorker:
    """``convert(path, file_type)`` in the child; use as a context manager so the child always ends."""

    def __init__(self, limits: ReadLimits):
        self._limits = limits
        self._process: Any = None
        self._conn: Connection | None = None

    def __enter__(self) -> ConversionWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def convert(self, path: Path, file_type: str) -> Converted:
        conn = self._started()
        try:
            conn.send((str(path), file_type))
        except OSError:  # the child died after its last answer (killed for memory, say): a fresh one
            self.close()
            conn = self._started()
            conn.send((str(path), file_type))
        if not conn.poll(self._limits.timeout_s):
            self.close()
            raise ConversionFailed(f"took longer than {self._limits.timeout_s:g}s (DASHRAG_FILE_TIMEOUT_S)")
        try:
            answer = conn.recv()
        except (EOFError, OSError):
            code = self._process.exitcode if self._process is not None else None
            self.close()
            raise ConversionFailed(f"the converter crashed on it (exit code {code})") from None
        if answer[0] == "failed":
            raise ConversionFailed(answer[1])
        _, pages, title, paged = answer
        return Converted(tuple(pages), title=title, paged=paged)

    def _started(self) -> Connection:
        if self._conn is None:
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            self._process = context.Process(target=_serve, args=(child, self._limits.model_dump()), daemon=True,
                                            name="dashrag-converter")
            self._process.start()
            child.close()
            self._conn = parent
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._process is not None:
            self._process.join(timeout=1)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
            self._process = None
