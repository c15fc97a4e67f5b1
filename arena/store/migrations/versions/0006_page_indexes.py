"""Indexes for the pages of a competition with many games: the games finished since a
count was taken (``games.finish_seq``: the leaderboard's and head-to-head counts are
brought up to date from there) and how many rated games have finished (a re-run changes
that number), a version's seats with their games and ranks (a bot's
games and head-to-head without reading the games' rows), and a version's latest
rating points (a bot page's chart).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("games_finish_seq", "games", ["finish_seq"])
    op.create_index("games_finished", "games", ["status", "rated", "finish_seq"])
    op.create_index("seats_version_game", "seats", ["version_id", "game_id", "rank"])
    op.create_index("rating_history_version_id", "rating_history", ["version_id", "id"])


def downgrade() -> None:
    op.drop_index("rating_history_version_id", "rating_history")
    op.drop_index("seats_version_game", "seats")
    op.drop_index("games_finished", "games")
    op.drop_index("games_finish_seq", "games")
