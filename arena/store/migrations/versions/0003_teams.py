"""Teams: an author is a team (the owner of bots, pages and logs); its members each hold a
token that signs in as the team, and a browser session remembers which member started it.
``authors.staff`` marks the organisers' baseline bots (badged, left out of prize ranks).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "members",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("author_id", sa.Integer, sa.ForeignKey("authors.id"), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("email", sa.String(254)),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created", TS, nullable=False),
        sa.UniqueConstraint("author_id", "name", name="members_team_name"),
    )
    op.create_index("members_author", "members", ["author_id"])
    # A plain ADD COLUMN, not a batch copy: on SQLite that drops and recreates
    # ``authors``, which the bots, sessions and games of an existing store refer to.
    op.add_column(
        "authors", sa.Column("staff", sa.Boolean, nullable=False, server_default=sa.false())
    )
    with op.batch_alter_table("sessions") as batch:  # nothing refers to sessions
        batch.add_column(
            sa.Column("member_id", sa.Integer, sa.ForeignKey("members.id", name="sessions_member"))
        )


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("member_id")
    op.drop_column("authors", "staff")
    op.drop_index("members_author", "members")
    op.drop_table("members")
