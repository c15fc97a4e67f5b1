"""Abuse limits: browser sessions apart from API tokens, rate-limit events that survive
a restart, and per-version build time and disk use (the fair build queue and the
per-author disk quota).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("author_id", sa.Integer, sa.ForeignKey("authors.id"), nullable=False),
        sa.Column("created", TS, nullable=False),
        sa.Column("expires", TS, nullable=False),
    )
    op.create_index("sessions_author", "sessions", ["author_id"])
    op.create_table(
        "rate_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("at", TS, nullable=False),
    )
    op.create_index("rate_events_key", "rate_events", ["kind", "key", "at"])
    with op.batch_alter_table("versions") as batch:
        batch.add_column(sa.Column("build_started", TS))
        batch.add_column(sa.Column("build_seconds", sa.Float))
        batch.add_column(
            sa.Column("stored_bytes", sa.BigInteger, nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("versions") as batch:
        batch.drop_column("stored_bytes")
        batch.drop_column("build_seconds")
        batch.drop_column("build_started")
    op.drop_table("rate_events")
    op.drop_table("sessions")
