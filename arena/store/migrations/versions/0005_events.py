"""Events: finals and scheduled rounds, tournaments over a snapshot of versions played
through the store's games (``games.event_id``), with their results kept once computed.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cutoff", TS, nullable=False),
        sa.Column("created", TS, nullable=False),
        sa.Column("started", TS),
        sa.Column("finished", TS),
        sa.Column("settings", sa.Text, nullable=False),
        sa.Column("created_by", sa.String(64)),
        sa.Column("results", sa.Text),
        sa.UniqueConstraint("kind", "number", name="events_kind_number"),
    )
    op.create_table(
        "event_entrants",
        sa.Column("event_id", sa.Integer, sa.ForeignKey("events.id"), primary_key=True),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), primary_key=True),
    )
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("event_id", sa.Integer))  # events.id (no FK: batch mode)
    op.create_index("games_event", "games", ["event_id"])


def downgrade() -> None:
    op.drop_index("games_event", "games")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("event_id")
    op.drop_table("event_entrants")
    op.drop_table("events")
