"""Reports of a tournament's results (read-only): leaderboard, head-to-head, seat
advantage and splits, as a terminal table and as Markdown, CSV, JSON and HTML files.

Names are imported on first use, so ``arena.report.current`` (is the report up to date?)
costs no pandas or matplotlib import.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "Report": "build",
    "build_report": "build",
    "make_report": "command",
    "report_command": "command",
    "Results": "data",
    "load_results": "data",
    "ReportFiles": "files",
    "html_path": "files",
    "report_dir": "files",
    "write_report": "files",
    "leaderboard_table": "terminal",
    "progress_text": "terminal",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'arena.report' has no attribute {name!r}")
    return getattr(importlib.import_module(f"arena.report.{_HOME[name]}"), name)
