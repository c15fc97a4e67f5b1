"""Write the report into ``OUTDIR/report/``: Markdown, HTML, JSON and one CSV per table.

Each file is written to a temporary name and renamed into place, so a browser or script
reading the report while a tournament runs never sees a half-written file.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from arena.report.build import Report
from arena.report.html import render_html
from arena.report.markdown import render_markdown

REPORT_DIR = "report"


def report_dir(outdir: Path) -> Path:
    return Path(outdir) / REPORT_DIR


def html_path(outdir: Path) -> Path:
    """Where ``report.html`` of a tournament folder is (whether written yet or not)."""
    return report_dir(outdir) / "report.html"


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    json: Path
    csv: dict[str, Path]


def report_json(report: Report) -> dict[str, Any]:
    """Summary plus every table as a list of records (NaN/NA as null)."""
    return {
        "summary": report.summary,
        "tables": {
            name: orjson.loads(frame.to_json(orient="records", force_ascii=False))
            for name, frame in report.tables().items()
        },
    }


def report_json_text(report: Report) -> str:
    """``report.json``: indented, UTF-8 (orjson: the fault log of a million games is
    hundreds of thousands of records, a minute for the standard library's encoder)."""
    text = orjson.dumps(
        report_json(report),
        option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
    )
    return text.decode() + "\n"


def write_report(report: Report, outdir: Path) -> ReportFiles:
    folder = report_dir(outdir)
    folder.mkdir(parents=True, exist_ok=True)
    csv = {}
    for name, frame in report.tables().items():
        csv[name] = folder / f"{name}.csv"
        _write_text(csv[name], frame.to_csv(index=False))
    files = ReportFiles(
        markdown=folder / "report.md",
        html=html_path(outdir),
        json=folder / "report.json",
        csv=csv,
    )
    _write_text(files.markdown, render_markdown(report))
    _write_text(files.json, report_json_text(report))
    _write_text(files.html, render_html(report))
    return files


def _write_text(path: Path, text: str) -> None:
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
