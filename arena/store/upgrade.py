"""``arena upgrade``: bring any arena store to this arena's schema, or say why not.

A target is a tournament folder, a store file (a tournament's, an SPRT test's, a
competition's) or a database URL. What it holds is read from its tables: a tournament
(``meta.schema_version``), a competition (alembic's ``alembic_version``) or an SPRT
ledger (``legs``, whose schema never changed). A tournament file of schema 1 or 2 is
migrated in place, a copy of the old file kept next to it; a competition database is
migrated by its alembic revisions; a store written by a newer arena, or something that is
not an arena store, is refused with what was found and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from arena.store.engine import (
    DB_ERRORS,
    StoreError,
    describe_url,
    explain,
    is_url,
    make_engine,
    sqlite_url,
)
from arena.store.tournament import (
    SCHEMA_VERSION,
    STORE_NAME,
    store_location,
    upgrade_store,
)


@dataclass(frozen=True)
class Upgraded:
    """What ``arena upgrade`` did: ``kind`` of store, schema ``before`` and ``after``."""

    where: str
    kind: str
    before: str
    after: str
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def describe(self) -> str:
        if not self.changed:
            return f"{self.where}: {self.kind} already up to date (schema {self.after})"
        kept = f"; the old file is kept as {self.backup}" if self.backup else ""
        return f"{self.where}: {self.kind} upgraded from schema {self.before} to {self.after}{kept}"


def upgrade(target: str | Path) -> Upgraded:
    """Upgrade the store at ``target`` (folder, file or URL); raises :class:`StoreError`
    when it cannot (not a store, written by a newer arena, unreachable)."""
    if is_url(target):
        return _upgrade_url(str(target), describe_url(str(target)))
    path = Path(target)
    if not path.exists():
        raise StoreError(f"{path}: no such file or folder")
    if path.is_dir():
        location = store_location(path)
        if isinstance(location, str):
            return _upgrade_url(location, f"{path} ({describe_url(location)})")
        if not location.is_file():
            sprt = path / "sprt.sqlite"
            if sprt.is_file():
                return _upgrade_url(sqlite_url(sprt), str(sprt))
            raise StoreError(
                f"{path}: no arena store here ({STORE_NAME} is missing)",
                hint="give a tournament folder, a store file or a database URL",
            )
        path = location
    return _upgrade_url(sqlite_url(path), str(path), file=path)


def _tables(url: str, where: str) -> tuple[set[str], str | None, str | None]:
    """(tables, tournament schema version, competition revision) of a store."""
    engine = make_engine(url, readonly=True)
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            version = revision = None
            if "meta" in tables:
                version = conn.execute(
                    sa.text("SELECT value FROM meta WHERE key = 'schema_version'")
                ).scalar()
            if "alembic_version" in tables:
                revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    except DB_ERRORS as exc:
        raise StoreError(explain(exc, where, "cannot read", what="arena store")) from None
    finally:
        engine.dispose()
    return tables, None if version is None else str(version), revision


def _upgrade_url(url: str, where: str, file: Path | None = None) -> Upgraded:
    tables, version, revision = _tables(url, where)
    if "alembic_version" in tables:
        return _upgrade_competition(url, where, revision)
    if "legs" in tables and "meta" in tables and "schedule" not in tables:
        return Upgraded(where, "SPRT ledger", "1", "1")  # one schema so far
    if "meta" in tables and version is not None:
        current = str(SCHEMA_VERSION)
        if version == current:
            return Upgraded(where, "tournament store", version, version)
        if file is not None and version in ("1", "2"):
            upgrade_store(file)
            return Upgraded(
                where,
                "tournament store",
                version,
                current,
                file.with_name(f"{file.name}.v{version}"),
            )
        raise StoreError(
            f"{where}: a tournament store of schema {version}; this arena reads and upgrades "
            f"schemas 1 to {current}",
            hint="it was written by a newer arena: use that version (pip install -U azul-arena)",
        )
    what = "an empty database" if not tables else f"tables {', '.join(sorted(tables)[:6])}"
    raise StoreError(
        f"{where}: not an arena store (found {what})",
        hint="give a tournament folder, a store file or the competition's database URL",
    )


def _upgrade_competition(url: str, where: str, before: str | None) -> Upgraded:
    from arena.store.competition import CompetitionStore
    from arena.store.migrations import head_revision

    head = head_revision()
    try:
        CompetitionStore.open(url).close()  # migrates to head; refuses a newer revision
    except StoreError as exc:
        raise StoreError(f"{where}: competition store: {exc}", hint=exc.hint) from None
    return Upgraded(where, "competition store", str(before), head)
