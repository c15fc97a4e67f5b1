"""``arena backup`` / ``arena restore``: a hosted competition's store and files, copied.

A backup is a folder: ``manifest.json`` (format, arena's store schema revision, the
original data folder, the row count of every table, the SHA-256 of every file),
the store (``store.sqlite``, taken with SQLite's online backup API, so it is consistent
while ``arena serve`` writes; or ``store.pgdump`` from ``pg_dump``), and ``data/``, the
data folder's uploads, sources and build copies (not the SQLite file, taken above, nor
the build cache, which refills itself).

Restore checks every checksum before it writes anything, refuses a data folder that is
not empty (and a PostgreSQL store that has tables), copies the files, loads the store,
points the stored file paths at the new data folder, and checks the row counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from arena import __version__
from arena.store.engine import StoreError, describe_url, make_engine

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_COPY = "store.sqlite"
PG_DUMP = "store.pgdump"
DATA = "data"
SKIPPED = frozenset({"build-cache", "game-logs"})
"""Top-level entries of the data folder a backup leaves out: the build cache (it refills
itself) and the logs of games in flight (a game's stderr is stored with its result; the
folder of a game is gone once it ends)."""
PATH_COLUMNS = (("versions", "archive_path"), ("versions", "built_path"))
"""Stored absolute paths into the data folder, moved on restore."""


class BackupError(StoreError):
    """A backup that cannot be written or restored, with a one-line reason."""


@dataclass(frozen=True)
class BackupSummary:
    folder: Path
    counts: dict[str, int]
    files: int


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sqlite_file(url: str) -> Path | None:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:") else None


def _libpq(url: str) -> tuple[str, dict[str, str]]:
    """The URL pg_dump understands (no driver suffix, no password: that goes in the
    environment, never on a command line other users can read)."""
    parsed = sa.engine.make_url(url)
    env = dict(os.environ)
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)
    bare = parsed.set(drivername=parsed.get_backend_name(), password=None)
    return bare.render_as_string(hide_password=False), env


def _empty_folder(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def _counts(url: str) -> tuple[dict[str, int], str | None]:
    """Rows per table, and the schema revision, of the store at ``url``."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return _counted(conn)
    finally:
        engine.dispose()


def _counted(conn: sa.Connection) -> tuple[dict[str, int], str | None]:
    names = sorted(sa.inspect(conn).get_table_names())
    counts = {
        n: int(conn.execute(sa.text(f'SELECT count(*) FROM "{n}"')).scalar_one())
        for n in names
        if n != "alembic_version"
    }
    revision = None
    if "alembic_version" in names:
        revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    return counts, None if revision is None else str(revision)


def _pg_dump(url: str, target: Path) -> tuple[dict[str, int], str | None]:
    """``pg_dump`` of one exported snapshot, counted in that same snapshot, so the counts
    are those of the dump even while the ladder writes."""
    engine = make_engine(url)
    try:
        conn = engine.connect().execution_options(isolation_level="REPEATABLE READ")
        with conn, conn.begin():
            snapshot = str(conn.execute(sa.text("SELECT pg_export_snapshot()")).scalar_one())
            counted = _counted(conn)
            conninfo, env = _libpq(url)
            _run(
                [
                    "pg_dump",
                    "--format=custom",
                    "--no-owner",
                    f"--snapshot={snapshot}",
                    f"--file={target}",
                    conninfo,
                ],
                "backing up the store",
                env,
            )
    finally:
        engine.dispose()
    return counted


def _run(command: list[str], what: str, env: dict[str, str]) -> None:
    if shutil.which(command[0]) is None:
        raise BackupError(
            f"{what} needs {command[0]}, which is not installed",
            hint="install the PostgreSQL client tools (e.g. apt-get install postgresql-client)",
        )
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise BackupError(f"{what}: {command[0]} failed: {last}")


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path


def backup(url: str, data_dir: Path, dest: Path) -> BackupSummary:
    """Copy the store at ``url`` and the files of ``data_dir`` into the new folder ``dest``."""
    if not _empty_folder(dest):
        raise BackupError(f"{dest}: exists and is not empty; choose a new folder")
    if dest.resolve().is_relative_to(data_dir.resolve()):
        raise BackupError(f"{dest}: inside the data folder {data_dir}; choose a folder outside it")
    store_file = _sqlite_file(url)
    if store_file is not None and not store_file.is_file():
        raise BackupError(f"no store at {store_file}: nothing to back up")
    existed = dest.exists()
    try:
        return _backup_into(url, store_file, data_dir, dest)
    except BaseException:
        _clear(dest, existed)  # no half-written backup that looks like one
        raise


def _backup_into(url: str, store_file: Path | None, data_dir: Path, dest: Path) -> BackupSummary:
    try:
        dest.mkdir(parents=True, exist_ok=True)
        if store_file is not None:
            _sqlite_backup(store_file, dest / SQLITE_COPY)
            counts, revision = _counts(f"sqlite:///{dest / SQLITE_COPY}")
        else:
            counts, revision = _pg_dump(url, dest / PG_DUMP)
        skipped = SKIPPED | (
            {store_file.name, store_file.name + "-wal", store_file.name + "-shm"}
            if store_file is not None and store_file.parent == data_dir
            else set()
        )
        _copy_data(data_dir, dest / DATA, skipped)
        files = {str(p.relative_to(dest)): _sha256(p) for p in _files(dest) if p != dest / MANIFEST}
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "arena": __version__,
            "schema": revision,
            "store": "sqlite" if store_file is not None else "postgresql",
            "data_dir": str(data_dir.resolve()),
            "counts": counts,
            "files": files,
        }
        (dest / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        raise BackupError(f"cannot write the backup in {dest}: {exc.strerror or exc}") from None
    return BackupSummary(dest, counts, len(files))


def _copy_data(source: Path, target: Path, skipped: set[str] | frozenset[str]) -> None:
    """The data folder's files as they are now. The server goes on running: a file or a
    folder it removes meanwhile (a spent upload, a replaced build) is simply not copied."""
    target.mkdir()
    with contextlib.suppress(FileNotFoundError):
        shutil.copystat(source, target)
    for folder, dirs, names in os.walk(source):  # a folder gone meanwhile: walk skips it
        here = Path(folder)
        into = target / here.relative_to(source)
        if here == source:
            dirs[:] = [d for d in dirs if d not in skipped]
            names = [n for n in names if n not in skipped]
        for name in [*dirs, *names]:
            path = here / name
            with contextlib.suppress(FileNotFoundError):
                if path.is_symlink():
                    os.symlink(os.readlink(path), into / name)
                elif name in dirs:
                    (into / name).mkdir()
                    shutil.copystat(path, into / name)  # private folders stay private
                else:
                    shutil.copy2(path, into / name)
        dirs[:] = [d for d in dirs if (into / d).is_dir() and not (into / d).is_symlink()]


def _sqlite_backup(source: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy even while another process writes."""
    try:
        with (
            contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src,
            contextlib.closing(sqlite3.connect(target)) as dst,
        ):
            src.backup(dst)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot back up the store {source}: {exc}") from None


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of the backup ``folder``, every file checked against its checksum."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(f"{folder}: not a backup (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"{folder}: the backup is damaged ({MANIFEST}: {exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{folder}: not a backup this arena can read (format)")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise BackupError(f"{folder}: the backup is damaged ({MANIFEST} lists no files)")
    on_disk = {str(p.relative_to(folder)) for p in _files(folder)} - {MANIFEST}
    for name in sorted(set(files) | on_disk):
        path = folder / name
        if name not in files:
            raise BackupError(f"{folder}: the backup is damaged ({name} is not in the manifest)")
        if not path.is_file():
            raise BackupError(f"{folder}: the backup is damaged ({name} is missing)")
        if _sha256(path) != files[name]:
            raise BackupError(f"{folder}: the backup is damaged ({name} has changed)")
    return manifest


def restore(folder: Path, url: str, data_dir: Path) -> BackupSummary:
    """Restore the backup ``folder`` into the empty ``data_dir`` and the store at ``url``."""
    manifest = read_manifest(folder)
    from arena.store.migrations import known_revision

    schema = manifest.get("schema")
    if not isinstance(schema, str) or not known_revision(schema):
        raise BackupError(
            f"{folder}: its store has schema revision {schema}, which this arena does not "
            "know: a newer arena made the backup",
            hint="restore it with that arena (pip install -U 'azul-arena[server]')",
        )
    if not _empty_folder(data_dir):
        raise BackupError(f"{data_dir}: exists and is not empty; restore into a new data folder")
    store_file = _sqlite_file(url)
    if (store_file is None) != (manifest.get("store") == "postgresql"):
        raise BackupError(
            f"{folder} holds a {manifest.get('store')} store but the competition's store is "
            f"{'sqlite' if store_file else 'postgresql'}"
        )
    if store_file is None and _counts(url)[0]:
        raise BackupError(f"the store {describe_url(url)} has tables; restore into an empty one")
    existed = data_dir.exists()
    try:
        counts = _restore_into(folder, manifest, url, store_file, data_dir)
    except BaseException:
        # nothing half-restored is left behind to be served (a PostgreSQL store that
        # pg_restore began to fill must be emptied by hand: the error says why it failed)
        _clear(data_dir, existed)
        if store_file is not None and not store_file.is_relative_to(data_dir):
            store_file.unlink(missing_ok=True)
        raise
    return BackupSummary(data_dir, counts, len(manifest["files"]))


def _clear(folder: Path, keep_folder: bool) -> None:
    if not folder.exists():
        return
    if not keep_folder:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _restore_into(
    folder: Path, manifest: dict[str, Any], url: str, store_file: Path | None, data_dir: Path
) -> dict[str, int]:
    try:
        shutil.copytree(folder / DATA, data_dir, symlinks=True, dirs_exist_ok=True)
        if store_file is not None:
            store_file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / SQLITE_COPY, store_file)
        else:
            conninfo, env = _libpq(url)
            _run(
                [
                    "pg_restore",
                    "--no-owner",
                    "--exit-on-error",
                    f"--dbname={conninfo}",
                    str(folder / PG_DUMP),
                ],
                "restoring the store",
                env,
            )
    except OSError as exc:
        raise BackupError(f"cannot restore into {data_dir}: {exc.strerror or exc}") from None
    _move_paths(url, Path(manifest["data_dir"]), data_dir.resolve())
    counts, _ = _counts(url)
    if counts != manifest["counts"]:
        raise BackupError(f"the restored store of {folder} does not hold the rows it should")
    return counts


def _move_paths(url: str, old: Path, new: Path) -> None:
    """Stored paths under the old data folder now point into the new one."""
    if old == new:
        return
    engine = make_engine(url)
    prefix = str(old).rstrip("/") + "/"
    try:
        with engine.begin() as conn:
            for table, column in PATH_COLUMNS:
                conn.execute(
                    sa.text(
                        f"UPDATE {table} SET {column} = :new || substr({column}, :cut) "
                        f"WHERE substr({column}, 1, :length) = :prefix"
                    ),
                    {
                        "new": str(new).rstrip("/") + "/",
                        "cut": len(prefix) + 1,
                        "length": len(prefix),
                        "prefix": prefix,
                    },
                )
    finally:
        engine.dispose()
