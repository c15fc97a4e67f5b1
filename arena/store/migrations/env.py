"""alembic environment: migrations run on the connection ``CompetitionStore.open`` hands in."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - the alembic CLI with a URL
    from sqlalchemy import create_engine

    url = context.config.get_main_option("sqlalchemy.url")
    assert url, "set sqlalchemy.url or run migrations through CompetitionStore.open"
    with create_engine(url).connect() as conn:
        context.configure(connection=conn, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        conn.commit()
else:
    context.configure(connection=connection, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
