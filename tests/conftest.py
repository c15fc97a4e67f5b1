"""Test-suite wide settings, and a real PostgreSQL for the stores' tests.

PostgreSQL comes from ``ARENA_TEST_POSTGRES_URL`` (CI: `.ci/run` starts a server), or
else a throw-away cluster the ``postgres_server`` fixture starts with Debian's
``initdb``/``pg_ctl`` in a temporary folder (as an unprivileged user when run as root),
or else the PostgreSQL tests skip with the reason, which ``ARENA_REQUIRE_POSTGRES=1``
turns into a failure. Every test gets a database of its own (``postgres_url``).
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import settings

from tests.pgutil import drop_database

# Bot programs used as fixtures are not test modules (and must not be imported).
collect_ignore_glob = ["*/fixtures/*"]

# CI must be deterministic: the same examples on every run (`derandomize`), no example
# database carried between runs.  Locally the default profile explores new examples.
# No deadline: an example's time is the machine's load (the suite runs on every core),
# never what a property test checks.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("dev", print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

GROUPS_ENV = "ARENA_TEST_GROUPS"
"""A folder where each pytest-xdist worker writes the groups it collected (see below)."""


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        os.environ[GROUPS_ENV] = tempfile.mkdtemp(prefix="arena-test-groups-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and GROUPS_ENV in os.environ:
        shutil.rmtree(os.environ.pop(GROUPS_ENV), ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``: a worker per core, ``--dist loadgroup``), the
    tests of a module that share a module-scoped fixture (a live server, a played
    tournament) run on one worker, in the module's order: that fixture is built once, and
    the tests that build on its state (the finals, then their results page) see it.

    xdist's own ``loadgroup`` reads the groups from the test ids, which pytest 9 no longer
    lets it rewrite; so each worker writes them to a file and :func:`pytest_xdist_make_scheduler`
    reads them."""
    groups: dict[str, str] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        shared = info is not None and any(
            defs[-1].scope in ("module", "class", "package")
            for defs in info.name2fixturedefs.values()
            if defs
        )
        if shared:
            groups[item.nodeid] = item.nodeid.split("::")[0]
        for mark in item.iter_markers("xdist_group"):
            groups[item.nodeid] = str(mark.args[0] if mark.args else mark.kwargs["name"])
    folder = os.environ.get(GROUPS_ENV)
    worker = getattr(config, "workerinput", {}).get("workerid")
    if folder and worker:
        part = Path(folder) / f"{worker}.json.part"
        part.write_text(json.dumps(groups))
        part.rename(part.with_suffix(""))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's load-by-scope scheduling, scoped by the groups the
    workers wrote (a test without a group is a scope of its own)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    folder = Path(os.environ[GROUPS_ENV])

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:  # read once every worker has collected
                self._groups = {}
                for written in sorted(folder.glob("*.json")):
                    self._groups.update(json.loads(written.read_text()))
            return self._groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


POSTGRES_URL_ENV = "ARENA_TEST_POSTGRES_URL"
REQUIRE_ENV = "ARENA_REQUIRE_POSTGRES"


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"PostgreSQL required ({REQUIRE_ENV}=1) but {reason}")
    pytest.skip(reason)


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A URL (with the ``postgres`` maintenance database) of a PostgreSQL server."""
    url = os.environ.get(POSTGRES_URL_ENV)
    if url:
        yield url
        return
    bindir = _pg_bin()
    if bindir is None:
        _unavailable(f"no PostgreSQL: set {POSTGRES_URL_ENV} or install Debian's postgresql")
    assert bindir is not None
    user = "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    tmp = Path(tempfile.mkdtemp(prefix="arena-pg-"))
    data, sock = tmp / "data", tmp / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        tmp.chmod(0o755)
        shutil.chown(tmp, user)
        shutil.chown(sock, user)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        cmd = list(argv)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp)

    init = run(str(bindir / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "--no-sync")
    if init.returncode != 0:
        _unavailable(f"initdb failed: {init.stderr.strip()[-300:]}")
    port = _free_port()
    options = f"-p {port} -k {sock} -c listen_addresses='' -c fsync=off"
    start = run(
        str(bindir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-w",
        "-l",
        str(tmp / "log"),
        "start",
    )
    if start.returncode != 0:
        log = (tmp / "log").read_text(errors="replace")[-500:] if (tmp / "log").exists() else ""
        _unavailable(f"pg_ctl start failed: {start.stderr.strip()[-300:]} {log}")
    try:
        yield f"postgresql+psycopg://{user}@/postgres?host={sock}&port={port}"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the PostgreSQL server (dropped afterwards)."""
    name = f"arena_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(postgres_server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except sa.exc.OperationalError as exc:
        admin.dispose()
        _unavailable(f"cannot reach PostgreSQL at {POSTGRES_URL_ENV}: {exc.orig}")
    url = sa.engine.make_url(postgres_server).set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        drop_database(admin, name)
        admin.dispose()
