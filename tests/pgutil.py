"""PostgreSQL helpers the test fixtures share."""

from __future__ import annotations

import time

import sqlalchemy as sa


def drop_database(admin: sa.Engine, name: str, attempts: int = 20) -> None:
    """``DROP DATABASE ... WITH (FORCE)``, again for a moment while it fails: FORCE may not
    end a server process of another role on it (an autovacuum worker that just started on
    the fresh database: "must be a member of the role whose process is being terminated")."""
    for attempt in range(attempts):
        try:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except sa.exc.DBAPIError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.25)
