"""Reports of a tournament's results (read-only): leaderboard, head-to-head, seat
advantage and splits, as a terminal table and as Markdown, CSV, JSON and HTML files."""

from arena.report.build import Report, build_report
from arena.report.command import make_report, report_command
from arena.report.data import Results, load_results
from arena.report.files import ReportFiles, html_path, report_dir, write_report
from arena.report.terminal import leaderboard_table, progress_text

__all__ = [
    "Report",
    "ReportFiles",
    "Results",
    "build_report",
    "html_path",
    "leaderboard_table",
    "load_results",
    "make_report",
    "progress_text",
    "report_command",
    "report_dir",
    "write_report",
]
