"""Competition phases: the log of every phase change (the deadline, the finals, the
results), with who made it. The phase's own state is a row of ``settings``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "phase_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", TS, nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("phase_from", sa.String(16), nullable=False),
        sa.Column("phase_to", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("phase_log")
