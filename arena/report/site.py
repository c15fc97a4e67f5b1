"""The report as a small static site in ``OUTDIR/report/``: index, games, bots, replays.

* ``index.html``: status, date, the tournament's settings, the leaderboard (faults grouped
  by kind), the bots with their metadata, the rating plot, links to everything else;
* ``games.html``: every finished game, filterable by bot, player count, variant, end
  reason and faults, each linking to its replay;
* ``bots/NAME.html``: one page per bot (metadata, rating over games, score distribution,
  head-to-head, faults grouped by kind with a count and one example, worst losses);
* ``replays/GAME.html``: one small page per game that links the shared ``viewer.js`` and
  holds the game's viewer data (a finished game never changes, so existing replays are
  kept and only new games are drawn).

Everything bot-controlled is escaped (jinja2 autoescape) or embedded as script-safe JSON.
Built from the report's tables and the stored game records only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import multiprocess
import pandas as pd
from markupsafe import Markup
from pydantic import ValidationError

from arena.engine import GameRecord, ReplayError
from arena.report.build import Report
from arena.report.files import _write_text, report_dir
from arena.report.format import MISSING, leaderboard_display, pairs_display
from arena.report.plots import rating_history_svg, score_distribution_svg
from arena.report.sections import overview_lines, status_line
from arena.textsafe import visible
from arena.tournament.store import STORE_NAME, Store, iter_records
from arena.viewer.frames import viewer_data
from arena.viewer.page import asset, page, replay_page

REPLAY_STAMP = "<!-- azul-arena replay page v2 -->"
"""First line of a replay page; a page with another stamp is redrawn (v2: the seed as text,
v1 pages showed 64-bit seeds rounded)."""

WORST_LOSSES = 8


def slug(name: str) -> str:
    """A file name for a bot or game id: safe characters kept, others replaced, and a short
    hash added whenever anything was replaced (so two names never share a file).

    >>> slug("c-greedy")
    'c-greedy'
    >>> slug("../evil bot")
    '_.._evil_bot-d7f83166'
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80]
    if safe == name and not name.startswith("."):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"_{safe}-{digest}"


@dataclass
class GameRow:
    """One finished game as the games page lists it."""

    index: int
    game_id: str
    n_players: int
    variant: str
    end_reason: str
    rounds: int
    players: list[str]
    totals: list[int]
    ranks: list[int]
    faults: list[tuple[int, str]] = field(default_factory=list)
    """(seat, kind) of each fault."""

    @property
    def href(self) -> str:
        return f"replays/{slug(self.game_id)}.html"


@dataclass
class FaultGroup:
    kind: str
    count: int = 0
    forfeits: int = 0
    example: dict[str, Any] | None = None
    """game_id, href, round, message, last_message, stderr_tail of the first one."""


@dataclass(frozen=True)
class SiteFiles:
    index: Path
    games: Path
    bots: dict[str, Path]
    replays_written: int
    replays_kept: int
    problems: list[str]


def write_site(report: Report, outdir: Path, say: Callable[[str], None] | None = None) -> SiteFiles:
    """Write the site into ``OUTDIR/report/`` (next to the report files)."""
    folder = report_dir(outdir)
    (folder / "replays").mkdir(parents=True, exist_ok=True)
    (folder / "bots").mkdir(exist_ok=True)
    for name in ("viewer.js", "viewer.css", "site.js"):
        _write_text(folder / name, asset(name))
    rows, faults, written, kept, problems = _games(report, folder, say)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arena.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["slug"] = slug
    env.globals["site_nav"] = _nav
    metadata = bot_metadata(report.results.config)
    _add_stored_identity(metadata, report.results.outdir / STORE_NAME)
    order = list(report.leaderboard["bot"])
    bot_files = {}
    for bot in order:
        path = folder / "bots" / f"{slug(bot)}.html"
        _write_text(path, _bot_page(env, report, bot, rows, faults.get(bot, {}), metadata))
        bot_files[bot] = path
    games_path = folder / "games.html"
    _write_text(games_path, _games_page(env, rows, order))
    index_path = folder / "index.html"
    _write_text(index_path, _index_page(env, report, rows, faults, metadata))
    return SiteFiles(index_path, games_path, bot_files, written, kept, problems)


# ------------------------------------------------------------------ games and replays


def _games(
    report: Report, folder: Path, say: Callable[[str], None] | None
) -> tuple[list[GameRow], dict[str, dict[str, FaultGroup]], int, int, list[str]]:
    """Read every finished game's record once: rows, fault groups, and replay pages."""
    ids = report.results.game_ids()
    rows: list[GameRow] = []
    groups: dict[str, dict[str, FaultGroup]] = {}
    written = kept = 0
    problems: list[str] = []
    jobs: list[tuple[str, bytes, str]] = []
    store_file = report.results.outdir / STORE_NAME
    with Store(store_file, readonly=True) as store:
        blobs: Iterable[tuple[int, bytes]] = iter_records(store, sorted(ids))
        for count, (index, blob) in enumerate(blobs, start=1):
            game_id = str(ids[index])
            try:
                record = GameRecord.model_validate_json(blob)
            except ValidationError as exc:
                problems.append(f"{game_id}: stored record is invalid ({exc.error_count()} errors)")
                continue
            row = GameRow(
                index=int(index),
                game_id=game_id,
                n_players=record.n_players,
                variant=record.variant,
                end_reason=record.end_reason,
                rounds=len(record.rounds),
                players=list(record.players),
                totals=[f.total for f in record.final],
                ranks=[f.rank for f in record.final],
                faults=[(f.seat, f.kind) for f in record.faults],
            )
            rows.append(row)
            _group_faults(groups, record, row)
            path = folder / row.href
            if _current(path):
                kept += 1
            else:
                jobs.append((game_id, blob, str(path)))
            if say is not None and count % 500 == 0:
                say(f"  {count}/{len(ids)} games read")
    for problem in _draw_all(jobs):
        if problem is None:
            written += 1
        else:
            problems.append(problem)
    return rows, groups, written, kept, problems


PARALLEL_FROM = 100
"""Draw replays in a process pool (one worker per core) from this many new games on."""


def _draw_all(jobs: list[tuple[str, bytes, str]]) -> Iterable[str | None]:
    workers = min(os.cpu_count() or 1, 8)
    if len(jobs) < PARALLEL_FROM or workers < 2:
        yield from map(_draw, jobs)
        return
    with multiprocess.Pool(workers) as pool:
        yield from pool.imap_unordered(_draw, jobs, chunksize=16)


def _draw(job: tuple[str, bytes, str]) -> str | None:
    """Write one replay page; returns a problem or None."""
    game_id, blob, path = job
    try:
        data = viewer_data(GameRecord.model_validate_json(blob), game_id)
    except ReplayError as exc:
        return f"{game_id}: the record does not verify: {exc.divergence}"
    nav = _nav("../", f"game {game_id}")
    _write_text(Path(path), REPLAY_STAMP + "\n" + replay_page(data, asset_prefix="../", nav=nav))
    return None


def _current(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") == REPLAY_STAMP
    except (OSError, UnicodeDecodeError):
        return False


def _group_faults(
    groups: dict[str, dict[str, FaultGroup]], record: GameRecord, row: GameRow
) -> None:
    for fault in record.faults:
        bot = record.players[fault.seat]
        group = groups.setdefault(bot, {}).setdefault(fault.kind, FaultGroup(fault.kind))
        group.count += 1
        group.forfeits += int(fault.forfeit)
        if group.example is None:
            group.example = {
                "game_id": row.game_id,
                "href": row.href,
                "round": fault.round,
                "message": visible(fault.message),
                "last_message": visible(fault.last_message) if fault.last_message else None,
                "stderr_tail": _tail(fault.stderr_tail),
            }


def _tail(text: str | None, lines: int = 12) -> str | None:
    if not text:
        return None
    return visible("\n".join(text.rstrip().splitlines()[-lines:]), multiline=True)


# ------------------------------------------------------------------ bot metadata


def bot_metadata(config: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """Per bot name, what its folder's ``bot.toml`` says (language, author, description)
    and the folder's version (content hash), when the folder is still there."""
    from arena.referee.build import content_hash
    from arena.referee.manifest import ManifestError, load_bot

    out: dict[str, dict[str, str]] = {}
    for folder in (config or {}).get("bots", []):
        try:
            spec = load_bot(str(folder))
        except (ManifestError, OSError):
            continue
        meta = {"folder": str(folder)}
        for key in ("language", "author", "description"):
            value = getattr(spec.manifest, key)
            if value:
                meta[key] = str(value)
        with contextlib.suppress(OSError):
            meta["version"] = content_hash(spec.folder)[:12]
        out[spec.name] = meta
    return out


def _add_stored_identity(metadata: dict[str, dict[str, str]], store_path: Path) -> None:
    """Per bot label, what the store recorded: the version that played (content hash,
    which the folder may no longer have) and what the bot announced in ``ready``."""
    with Store(store_path, readonly=True) as store:
        played = {b.label: b.version for b in store.bots()}
        announced = store.announcements()
    for label, version in played.items():
        meta = metadata.setdefault(label, {})
        if version:
            meta["version"] = version[:12]
        said = announced.get(label)
        if said is None:
            continue
        meta["ready_name"] = said.name
        if said.author:
            meta["ready_author"] = said.author
        if said.version:
            meta["ready_version"] = said.version


def _shown(meta: dict[str, str], key: str) -> str:
    """A metadata value for a page: bot-controlled, so control characters are made
    visible here (jinja2 then HTML-escapes it); ``—`` when absent."""
    value = meta.get(key)
    return visible(value) if value else MISSING


def _author(meta: dict[str, str], both: bool = False) -> str:
    """The author from ``bot.toml``, else the one the bot announced in ``ready``; with
    ``both``, a different announced one follows in brackets."""
    if not meta.get("author"):
        return _shown(meta, "ready_author")
    said = meta.get("ready_author")
    if both and said and said != meta["author"]:
        return f"{_shown(meta, 'author')} (ready: {_shown(meta, 'ready_author')})"
    return _shown(meta, "author")


# ------------------------------------------------------------------ pages


def _nav(prefix: str, here: str = "") -> Markup:
    env = jinja2.Environment(autoescape=True)
    return Markup(
        env.from_string(
            '<nav class="az-nav"><a href="{{ p }}index.html">Leaderboard</a>'
            '<a href="{{ p }}games.html">Games</a>'
            '<a href="{{ p }}report.html">All tables</a>'
            "{% if here %}<span>{{ here }}</span>{% endif %}</nav>"
        ).render(p=prefix, here=here)
    )


def _site_page(title: str, body: str, prefix: str, script: bool = False) -> str:
    extra = f'<script src="{prefix}site.js"></script>' if script else ""
    # The site pages use the viewer's stylesheet (one file), and no viewer script.
    return page(title, body, asset_prefix=prefix, extra_script=extra, viewer=False)


def _settings(config: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not config:
        return [("settings", "not recorded in this store")]
    time = config.get("time") or {}
    clock = f"{time.get('move_ms', '?')} ms per decision, {time.get('init_ms', '?')} ms start-up"
    if time.get("bank_ms"):
        clock += f", bank {time['bank_ms']} ms (+{time.get('increment_ms', 0)} ms per decision)"
    kind = time.get("clock", "wall")  # stores from before clocks were selectable: wall
    clock += (
        f", {kind} clock"
        if kind != "cpu"
        else f", cpu clock (idle ceiling {time.get('wall_ceiling', '?')}x)"
    )
    rows = [
        ("bots", ", ".join(str(b) for b in config.get("bots", []))),
        ("player counts", ", ".join(str(p) for p in config.get("players", []))),
        ("walls", ", ".join(str(v) for v in config.get("variants", []))),
        ("deals per pairing", str(config.get("seeds", "?"))),
        ("master seed", str(config.get("master_seed", "?"))),
        ("round limit", str(config.get("round_limit", "?"))),
        ("time control", clock),
        ("fault policy", str(config.get("fault_policy", "?"))),
        ("sandbox", str(config.get("sandbox", "?")) + " (arena doctor lists the layers)"),
        ("workers", str(config.get("workers", "?")) + " (0 = one per core)"),
        ("bot processes", "persistent" if config.get("persistent", True) else "one per game"),
    ]
    return rows


def _when(epoch: float | None) -> str | None:
    if epoch is None or pd.isna(epoch):
        return None
    return dt.datetime.fromtimestamp(float(epoch), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _index_page(
    env: jinja2.Environment,
    report: Report,
    rows: list[GameRow],
    faults: dict[str, dict[str, FaultGroup]],
    metadata: dict[str, dict[str, str]],
) -> str:
    shown = leaderboard_display(report.leaderboard, compact=True)
    lb_rows = [
        {"bot": bot, "cells": [str(v) for v in cells]}
        for bot, cells in zip(report.leaderboard["bot"], shown.itertuples(index=False), strict=True)
    ]
    games_of = report.leaderboard.set_index("bot")["games"]
    bots = [
        {
            "name": bot,
            "language": _shown(metadata.get(bot, {}), "language"),
            "author": _author(metadata.get(bot, {})),
            "announced": _shown(metadata.get(bot, {}), "ready_version"),
            "version": _shown(metadata.get(bot, {}), "version"),
            "games": int(games_of.get(bot, 0)),
        }
        for bot in report.leaderboard["bot"]
    ]
    fault_summary = [
        {"bot": bot, **vars(group)}
        for bot in report.leaderboard["bot"]
        for group in sorted(faults.get(bot, {}).values(), key=lambda g: -g.count)
    ]
    body = env.get_template("index.html").render(
        status=status_line(report),
        first_game=_when(report.results.first_finished_at),
        last_game=_when(report.results.last_finished_at),
        overview=overview_lines(report)[1:],
        lb_head=[str(c) for c in shown.columns],
        lb_rows=lb_rows,
        fault_summary=fault_summary,
        bots=bots,
        settings=_settings(report.results.config),
        plot=Markup(rating_history_svg(report.ratings.history, list(report.leaderboard["bot"]))),
        n_games=len(rows),
    )
    return _site_page("Azul Arena — tournament report", body, "")


def _games_page(env: jinja2.Environment, rows: list[GameRow], order: list[str]) -> str:
    body = env.get_template("games.html").render(
        rows=rows,
        bots=order,
        player_counts=sorted({r.n_players for r in rows}),
        variants=sorted({r.variant for r in rows}),
        ends=sorted({r.end_reason for r in rows}),
        fault_kinds=sorted({kind for r in rows for _, kind in r.faults}),
    )
    return _site_page("Azul Arena — games", body, "", script=True)


def _bot_page(
    env: jinja2.Environment,
    report: Report,
    bot: str,
    rows: list[GameRow],
    faults: dict[str, FaultGroup],
    metadata: dict[str, dict[str, str]],
) -> str:
    meta = metadata.get(bot, {})
    lb = {str(k): v for k, v in report.leaderboard.set_index("bot").loc[bot].items()}
    facts = [
        ("language", _shown(meta, "language")),
        ("author", _author(meta, both=True)),
        ("version (from ready)", _shown(meta, "ready_version")),
        ("build (content hash)", _shown(meta, "version")),
        ("description", _shown(meta, "description")),
        ("folder", _shown(meta, "folder")),
        ("rank", str(lb["rank"])),
        ("rating μ − 3σ", f"{lb['rating']:.1f}"),
        ("games", str(lb["games"])),
        ("wins", str(lb["wins"])),
    ]
    if meta.get("ready_name") and meta["ready_name"] != bot.split("@")[0]:
        facts.insert(4, ("name it announced", _shown(meta, "ready_name")))
    mine = report.results.bot_scores(bot)
    pairs = report.head_to_head_pairs
    mine_pairs = pairs.loc[pairs["bot"] == bot]
    h2h = pairs_display(mine_pairs).drop(columns=["Bot", "Opponent"])
    losses: list[dict[str, Any]] = []
    for row in rows:
        for seat, name in enumerate(row.players):
            if name != bot or row.ranks[seat] == 1:
                continue
            best = max(row.totals)
            losses.append(
                {
                    "game_id": row.game_id,
                    "href": row.href,
                    "n_players": row.n_players,
                    "variant": row.variant,
                    "rank": row.ranks[seat],
                    "score": row.totals[seat],
                    "best": best,
                    "margin": best - row.totals[seat],
                    "opponents": ", ".join(p for i, p in enumerate(row.players) if i != seat),
                }
            )
    losses.sort(key=lambda g: (-g["margin"], g["game_id"]))
    body = env.get_template("bot.html").render(
        bot=bot,
        meta=facts,
        rating_plot=Markup(rating_history_svg(report.ratings.history, [bot])),
        score_plot=Markup(score_distribution_svg(mine)),
        h2h_head=[str(c) for c in h2h.columns],
        h2h_rows=[
            {"opponent": str(opponent), "cells": [str(v) for v in r]}
            for opponent, r in zip(mine_pairs["opponent"], h2h.itertuples(index=False), strict=True)
        ],
        faults=sorted(faults.values(), key=lambda g: -g.count),
        losses=losses[:WORST_LOSSES],
    )
    return _site_page(f"{bot} — Azul Arena", body, "../")
