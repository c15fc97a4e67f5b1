"""The few statements whose spelling differs between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection


def insert(conn: Connection, table: sa.Table) -> Any:
    """The dialect's INSERT, which knows ``ON CONFLICT`` (both have it)."""
    module = postgresql if conn.dialect.name == "postgresql" else sqlite
    return module.insert(table)


def upsert(
    conn: Connection,
    table: sa.Table,
    values: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    keys: Sequence[str],
    *,
    update: bool = True,
) -> Any:
    """INSERT ... ON CONFLICT (``keys``): replace the other columns (``update``) or keep
    the row already there (insert-if-absent). ``values`` None: bound at execution."""
    stmt = insert(conn, table)
    if values is not None:
        stmt = stmt.values(values)
    if not update:
        return stmt.on_conflict_do_nothing(index_elements=list(keys))
    rest = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys}
    return stmt.on_conflict_do_update(index_elements=list(keys), set_=rest)
