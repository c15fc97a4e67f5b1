"""The first competition store schema.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "settings",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "authors",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("organiser", sa.Boolean, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created", TS, nullable=False),
    )
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("author_id", sa.Integer, sa.ForeignKey("authors.id"), nullable=False),
        sa.Column("disqualified", sa.Boolean, nullable=False),
        sa.Column("created", TS, nullable=False),
    )
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("submitted", TS, nullable=False),
        sa.Column("archive_path", sa.Text, nullable=False),
        sa.Column("archive_sha256", sa.String(64), nullable=False),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("verdict", sa.Text),
        sa.Column("log", sa.Text),
        sa.Column("built_path", sa.Text),
        sa.Column("meta", sa.Text),
        sa.Column("language", sa.String(64)),
        sa.Column("ready_author", sa.Text),
        sa.Column("ready_version", sa.Text),
        sa.Column("decided", TS),
        sa.UniqueConstraint("bot_id", "number", name="versions_bot_number"),
    )
    op.create_index("versions_status", "versions", ["status"])
    op.create_table(
        "games",
        sa.Column("n", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("players", sa.Integer, nullable=False),
        sa.Column("variant", sa.String(16), nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("rated", sa.Boolean, nullable=False),
        sa.Column("requested_by", sa.Integer, sa.ForeignKey("authors.id")),
        sa.Column("rerun_of", sa.String(32)),
        sa.Column("created", TS, nullable=False),
        sa.Column("started", TS),
        sa.Column("finished", TS),
        sa.Column("finish_seq", sa.Integer),
        sa.Column("end_reason", sa.String(64)),
        sa.Column("rounds", sa.Integer),
        sa.Column("duration_s", sa.Float),
        sa.Column("worker", sa.String(200)),
    )
    op.create_index("games_status", "games", ["status"])
    op.create_table(
        "seats",
        sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), primary_key=True),
        sa.Column("seat", sa.Integer, primary_key=True),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), nullable=False),
        sa.Column("score", sa.Integer),
        sa.Column("rank", sa.Integer),
        sa.Column("forfeit", sa.Boolean),
    )
    op.create_index("seats_version", "seats", ["version_id"])
    op.create_table(
        "faults",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), nullable=False),
        sa.Column("seat", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("round", sa.Integer, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("forfeit", sa.Boolean, nullable=False),
    )
    op.create_index("faults_game", "faults", ["game_id"])
    op.create_table(
        "records",
        sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), primary_key=True),
        sa.Column("record", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "stderr_logs",
        sa.Column("game_id", sa.String(32), sa.ForeignKey("games.id"), primary_key=True),
        sa.Column("seat", sa.Integer, primary_key=True),
        sa.Column("text", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "ratings",
        sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), primary_key=True),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
        sa.Column("games", sa.Integer, nullable=False),
    )
    op.create_table(
        "rating_history",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), nullable=False),
        sa.Column("game_id", sa.String(32), nullable=False),
        sa.Column("finished", TS, nullable=False),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
    )
    op.create_index("rating_history_version", "rating_history", ["version_id"])


def downgrade() -> None:
    for table in (
        "rating_history",
        "ratings",
        "stderr_logs",
        "records",
        "faults",
        "seats",
        "games",
        "versions",
        "bots",
        "authors",
        "settings",
    ):
        op.drop_table(table)
