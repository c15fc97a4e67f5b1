"""The competition store's schema history (alembic), applied by ``CompetitionStore.open``.

A new schema change is a new file in ``versions/`` (``alembic revision`` with
``script_location`` pointing here); :func:`upgrade` brings any store to the newest
revision and refuses a store whose revision this arena does not know (a newer arena
wrote it).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Connection

HERE = Path(__file__).resolve().parent


def alembic_config(connection: Connection | None = None) -> object:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())  # type: ignore[arg-type]
    head = script.get_current_head()
    assert head is not None
    return head


def known_revision(revision: str) -> bool:
    """Whether ``revision`` is one of this arena's schema revisions (not a newer one)."""
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    script = ScriptDirectory.from_config(alembic_config())  # type: ignore[arg-type]
    try:
        return script.get_revision(revision) is not None
    except CommandError:
        return False


def current_revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection) -> None:
    """Migrate the store on ``connection`` to the newest schema (inside its transaction)."""
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    from arena.store.engine import StoreError

    cfg = alembic_config(connection)
    script = ScriptDirectory.from_config(cfg)  # type: ignore[arg-type]
    current = current_revision(connection)
    if current is not None:
        try:
            script.get_revision(current)
        except CommandError:
            raise StoreError(
                f"this store has schema revision {current}, which this arena does not know: "
                "a newer arena wrote it",
                hint="upgrade azul-arena (pip install -U 'azul-arena[server]')",
            ) from None
    if current != script.get_current_head():
        command.upgrade(cfg, "head")  # type: ignore[arg-type]
