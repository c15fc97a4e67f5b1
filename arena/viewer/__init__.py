"""See the games: HTML replays drawn from game records (``arena view``), shared by the report
site and the human seat's browser page. The JS/CSS are package data in ``static/``."""

from arena.viewer.frames import position, reproduce_command, viewer_data
from arena.viewer.page import replay_page, script_json

__all__ = ["position", "replay_page", "reproduce_command", "script_json", "viewer_data"]
