"""The report as a small static site in ``OUTDIR/report/``: index, games, bots, replays.

* ``index.html``: status, date, the tournament's settings, the leaderboard (faults grouped
  by kind), the bots with their metadata, the rating plot, links to everything else;
* ``games.html``: every finished game, filterable by bot, player count, variant, end
  reason and faults, each linking to its replay;
* ``bots/NAME.html``: one page per bot (metadata, rating over games, score distribution,
  head-to-head, faults grouped by kind with a count and one example, worst losses);
* ``replays/games-NNNNNNN.html``: the replays of a block of ``BLOCK`` games (by schedule
  index), linking the shared ``viewer.js``; a game opens as ``...html#g=GAME_ID``. Each
  game's data is assembled from its record and the frames the tournament stored when it
  was played (the engine runs here only for stores written before); a block is rewritten
  only when a game of it finished since (a finished game never changes).

Everything bot-controlled is escaped (jinja2 autoescape) or embedded as script-safe JSON.
Built from the report's tables and the stored game records only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import gc
import hashlib
import html
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote as shell_quote
from typing import Any
from urllib.parse import quote

import jinja2
import multiprocess
import orjson
import pandas as pd
from markupsafe import Markup
from pydantic import ValidationError

from arena.engine import GameRecord, ReplayError
from arena.referee.clock import TimeControl
from arena.report.build import Report
from arena.report.data import LOSSES_KEPT
from arena.report.files import _write_text, report_dir
from arena.report.format import MISSING, leaderboard_display, pairs_display
from arena.report.plots import BotFigures, rating_history_svg, thin
from arena.report.sections import overview_lines, status_line
from arena.store.tournament import Store, store_location
from arena.textsafe import visible
from arena.viewer.frames import assemble_json, viewer_data
from arena.viewer.page import asset, page, replay_block_page, script_json, script_safe

REPLAY_STAMP = "<!-- azul-arena replay page v3 -->"
"""First line of a replay page; a page with another stamp is redrawn (v3: blocks of games,
v2: the seed as text, v1 pages showed 64-bit seeds rounded)."""
STAMP_PREFIX = "<!-- azul-arena replay page"
"""What every version's stamp starts with: a page of an earlier report."""
BLOCK = 50
"""Games per replay page: one file per game cost more to create (~0.3 ms of system time
each here) than the game's data to write."""

WORST_LOSSES = LOSSES_KEPT
LISTED_GAMES = 10_000
"""The games pages list the last this many finished games (and the faulted ones below):
a million games would be hundreds of MB of HTML; any game is one ``arena view`` away."""
GAMES_PER_PAGE = 1_000
"""Rows per games page (``games.html`` the newest, ``games-2.html`` the page before...)."""
REPLAYED_RECENT = 1_000
"""Replays on the site: the last this many games, ..."""
REPLAYED_FAULTED = 1_000
"""... the last this many games with a fault (also listed on ``games-faulted.html``),
and each bot's worst losses and fault examples: bounded on disk at any number of games."""


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
    replayed: bool = True
    """Its replay is on the site (else ``arena view OUTDIR --game ID`` draws it)."""

    @property
    def href(self) -> str:
        return f"replays/{block_name(self.index)}#g={quote(self.game_id, safe='')}"


def block_name(index: int) -> str:
    """The replay page holding the game of schedule index ``index``."""
    return f"games-{index // BLOCK * BLOCK:07d}.html"


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


def write_site(
    report: Report,
    outdir: Path,
    say: Callable[[str], None] | None = None,
    plots: BotPlots | None = None,
) -> SiteFiles:
    """Write the site into ``OUTDIR/report/`` (next to the report files); ``plots``: the
    bot plots already being drawn (started before the report files, say)."""
    folder = report_dir(outdir)
    (folder / "replays").mkdir(parents=True, exist_ok=True)
    (folder / "bots").mkdir(exist_ok=True)
    for name in ("viewer.js", "viewer.css", "site.js"):
        _write_text(folder / name, asset(name))
    order = list(report.leaderboard["bot"])
    # The bot plots are drawn by worker processes while this one reads the records.
    with contextlib.ExitStack() as stack:
        if plots is None:
            plots = stack.enter_context(BotPlots(report, order))
        listing, faults, written, kept, problems = _games(report, folder, say)
        bot_plots = plots.result()
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arena.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["slug"] = slug
    env.globals["site_nav"] = _nav
    metadata = bot_metadata(report.results.config)
    _add_stored_identity(metadata, store_location(report.results.outdir))
    bot_files = {}
    for bot in order:
        path = folder / "bots" / f"{slug(bot)}.html"
        page_text = _bot_page(
            env,
            report,
            bot,
            listing.losses.get(bot, []),
            faults.get(bot, {}),
            metadata,
            bot_plots[bot],
        )
        _write_text(path, page_text)
        bot_files[bot] = path
    games_path = _write_games_pages(env, folder, listing, order, report.results.outdir)
    index_path = folder / "index.html"
    _write_text(index_path, _index_page(env, report, listing, faults, metadata))
    return SiteFiles(index_path, games_path, bot_files, written, kept, problems)


# ------------------------------------------------------------------ games and replays


@dataclass
class Listing:
    """The games the site shows: the last ``LISTED_GAMES`` (``recent``), the last
    ``REPLAYED_FAULTED`` with a fault (``faulted``), each bot's worst losses; out of
    ``finished``."""

    finished: int
    recent: list[GameRow]
    faulted: list[GameRow]
    losses: dict[str, list[dict[str, Any]]]


def _games(
    report: Report, folder: Path, say: Callable[[str], None] | None
) -> tuple[Listing, dict[str, dict[str, FaultGroup]], int, int, list[str]]:
    """The games listed and the fault groups, from the store's columns (no record parsed
    but one per fault group's example); then the replay page of each chosen game that has
    none yet (a finished game never changes, so pages already drawn are kept). Only the
    chosen games are held: memory and disk do not grow with the number of games."""
    store_file = store_location(report.results.outdir)
    finished = report.results.finished_index
    with Store(store_file, readonly=True) as store:
        first_listed = int(finished[-LISTED_GAMES]) if len(finished) > LISTED_GAMES else 0
        faulted_at = store.recent_indices(REPLAYED_FAULTED, faulted=True)
        game_faults, groups, examples = _fault_groups(store, min([first_listed, *faulted_at]))
        lost = _first_per_bot(report.results.worst_losses, WORST_LOSSES)
        replayed = set(int(i) for i in finished[-REPLAYED_RECENT:]) | set(faulted_at)
        replayed |= {index for _, index, _, _ in lost} | {index for _, index, _ in examples}
        recent = _rows(store.game_listing(start=first_listed), game_faults, replayed)
        listed = {row.index: row for row in recent}
        others = _rows(store.game_listing(indices=replayed - set(listed)), game_faults, replayed)
        rows = listed | {row.index: row for row in others}
        for group, index, ordinal in examples:
            _fill_example(group, store, rows.get(index), ordinal)
    listing = Listing(
        finished=len(finished),
        recent=recent,
        faulted=[rows[i] for i in faulted_at if i in rows],
        losses=_losses(lost, rows),
    )
    blocks: dict[str, list[tuple[int, str]]] = {}
    for index in sorted(replayed):
        if index in rows:
            blocks.setdefault(block_name(index), []).append((index, rows[index].game_id))
    jobs: list[BlockJob] = []
    kept = 0
    for name, games in blocks.items():
        path = folder / "replays" / name
        digest = _block_digest(games)
        if _current(path, digest):
            kept += len(games)
        else:
            jobs.append((str(store_file), games, str(path), digest))
    if say is not None and jobs:
        say(f"  {sum(len(j[1]) for j in jobs)} replay(s) to write, {kept} kept")
    written = 0
    problems: list[str] = []
    for count, block_problems in _draw_all(jobs):
        written += count
        problems += block_problems
    _remove_old_pages(folder, {folder / "replays" / name for name in blocks})
    return listing, groups, written, kept, problems


def _first_per_bot(
    losses: list[tuple[str, int, int, int]], keep: int
) -> list[tuple[str, int, int, int]]:
    """The first ``keep`` of each bot's losses (the snapshot keeps ``LOSSES_KEPT``)."""
    taken: dict[str, int] = {}
    out = []
    for loss in losses:
        taken[loss[0]] = taken.get(loss[0], 0) + 1
        if taken[loss[0]] <= keep:
            out.append(loss)
    return out


def _rows(
    listing: Iterable[tuple[Any, ...]],
    game_faults: dict[int, list[tuple[int, str]]],
    replayed: set[int],
) -> list[GameRow]:
    return [
        GameRow(
            index=int(index),
            game_id=str(game_id),
            n_players=int(n),
            variant=str(variant),
            end_reason=str(end),
            rounds=int(rounds),
            players=list(labels),
            totals=list(scores),
            ranks=list(ranks),
            faults=game_faults.get(int(index), []),
            replayed=int(index) in replayed,
        )
        for index, game_id, n, variant, end, rounds, labels, scores, ranks in listing
    ]


def _losses(
    lost: list[tuple[str, int, int, int]], rows: dict[int, GameRow]
) -> dict[str, list[dict[str, Any]]]:
    """Each bot's worst losses (the store ranked them) as its page shows them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for bot, index, seat, margin in lost:
        row = rows.get(index)
        if row is None:
            continue
        out.setdefault(bot, []).append(
            {
                "game_id": row.game_id,
                "href": row.href,
                "n_players": row.n_players,
                "variant": row.variant,
                "rank": row.ranks[seat],
                "score": row.totals[seat],
                "best": row.totals[seat] + margin,
                "margin": margin,
                "opponents": ", ".join(p for i, p in enumerate(row.players) if i != seat),
            }
        )
    return out


def _remove_old_pages(folder: Path, current: set[Path]) -> None:
    """Remove what earlier reports wrote and this one no longer links: the per-game
    cache, one-page-per-game replays, blocks of games no longer there (files without a
    replay stamp are not ours and are left alone)."""
    with contextlib.suppress(OSError):
        (folder / GAMES_CACHE).unlink(missing_ok=True)
    with contextlib.suppress(OSError), os.scandir(folder / "replays") as entries:
        for entry in entries:
            path = Path(entry.path)
            if path in current or not entry.name.endswith(".html"):
                continue
            ours = False
            with contextlib.suppress(OSError), path.open("rb") as handle:
                ours = handle.read(len(STAMP_PREFIX)) == STAMP_PREFIX.encode()
            if ours:
                path.unlink(missing_ok=True)


GAMES_CACHE = ".games-cache.json"
"""Written by earlier reports (rows parsed from records); removed: rows come from SQL."""


def _fault_groups(
    store: Store, listed_from: int = 0
) -> tuple[
    dict[int, list[tuple[int, str]]],
    dict[str, dict[str, FaultGroup]],
    list[tuple[FaultGroup, int, int]],
]:
    """From the store's fault rows: (seat, kind) of each game's faults from schedule
    position ``listed_from`` on (the games listed), the groups per bot and kind, and for
    each group the (game index, fault's position in its record) of its first fault, the
    example shown."""
    game_faults: dict[int, list[tuple[int, str]]] = {}
    groups: dict[str, dict[str, FaultGroup]] = {}
    examples: list[tuple[FaultGroup, int, int]] = []
    game, ordinal = -1, 0
    for index, seat, label, kind, round_, message, forfeit, *_ in store.fault_rows():
        game, ordinal = (game, ordinal + 1) if int(index) == game else (int(index), 0)
        if game >= listed_from:
            game_faults.setdefault(game, []).append((int(seat), str(kind)))
        group = groups.setdefault(str(label), {}).setdefault(str(kind), FaultGroup(str(kind)))
        group.count += 1
        group.forfeits += int(forfeit)
        if group.example is None:
            group.example = {"round": int(round_), "message": visible(str(message))}
            examples.append((group, int(index), ordinal))
    return game_faults, groups, examples


def _fill_example(group: FaultGroup, store: Store, row: GameRow | None, ordinal: int) -> None:
    """Complete a group's example from its game's record: the link, and what only the
    record keeps (the bot's last message and stderr tail)."""
    if row is None or group.example is None:
        return
    group.example.update(game_id=row.game_id, href=row.href, last_message=None, stderr_tail=None)
    try:
        record = orjson.loads(store.record_json(row.index) or b"{}")
        fault = record["faults"][ordinal]
        last, tail = fault.get("last_message"), fault.get("stderr_tail")
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
        return  # a damaged record: the stored message is all there is
    group.example["last_message"] = visible(str(last)) if last else None
    group.example["stderr_tail"] = _tail(str(tail) if tail else None)


PARALLEL_FROM = 2
"""Write replay blocks in a process pool (one worker per core) from this many on."""

BlockJob = tuple[str, list[tuple[int, str]], str, str]
"""(store file, (schedule index, game id) of the block's games, page path, digest)."""


def _draw_all(jobs: list[BlockJob]) -> Iterable[tuple[int, list[str]]]:
    workers = min(os.cpu_count() or 1, 8)
    if len(jobs) < PARALLEL_FROM or workers < 2:
        yield from map(_draw_block, jobs)
        return
    # Forked workers share the parent's memory (pandas, the report's tables) until they
    # write to it; a collection in a worker would touch every object, copying it all:
    # objects alive now are frozen out of collections.
    gc.freeze()
    try:
        with multiprocess.Pool(workers) as pool:
            yield from pool.imap_unordered(_draw_block, jobs, chunksize=1)
    finally:
        gc.unfreeze()


_STORES: dict[str, Store] = {}
"""Per process (pool workers included): the store read for replays, opened once."""


def _draw_block(job: BlockJob) -> tuple[int, list[str]]:
    """Write one block's replay page; returns (games written, problems)."""
    store_file, games, path, digest = job
    store = _STORES.get(store_file)
    if store is None:
        store = _STORES[store_file] = Store(store_file, readonly=True)
    items: list[tuple[str, str]] = []
    problems: list[str] = []
    for index, game_id in games:
        data, problem = _game_data(store, index, game_id)
        if data is not None:
            items.append((game_id, data))
        if problem is not None:
            problems.append(problem)
    first, last = games[0][0], games[-1][0]
    nav = _nav("../", f"games {first}–{last}" if first != last else f"game {first}")
    page_text = replay_block_page(items, asset_prefix="../", nav=nav)
    _write_page(Path(path), f"{REPLAY_STAMP}\n<!-- {digest} -->\n{page_text}")
    return len(items), problems


def _game_data(store: Store, index: int, game_id: str) -> tuple[str | None, str | None]:
    """(a game's viewer data as script-safe JSON text, None) from its record and stored
    frames (drawn by the engine only for a game stored without them), or (None, a
    problem)."""
    source = store.replay_source(index)
    if source is None:
        return None, f"{game_id}: no stored record"
    blob, frames = source
    try:
        if frames is not None:
            return script_safe(assemble_json(blob, frames, game_id)), None
        return script_json(viewer_data(GameRecord.model_validate_json(blob), game_id)), None
    except ReplayError as exc:
        return None, f"{game_id}: the record does not verify: {exc.divergence}"
    except (ValidationError, ValueError, KeyError, TypeError) as exc:
        count = exc.error_count() if isinstance(exc, ValidationError) else 1
        return None, f"{game_id}: stored record is invalid ({count} errors)"


def _block_digest(games: list[tuple[int, str]]) -> str:
    """What a block page was written for: its games (a game finished since changes it)."""
    text = "\n".join(f"{index}:{game_id}" for index, game_id in games)
    return "games " + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


PAGE_END = b"</html>\n"


def _current(path: Path, digest: str) -> bool:
    """A complete page (it ends as every page does) of the current stamp, for these games."""
    try:
        with path.open("rb") as handle:
            stamp = handle.readline().rstrip(b"\n")
            written_for = handle.readline().rstrip(b"\n")
            handle.seek(-len(PAGE_END), os.SEEK_END)
            complete = handle.read() == PAGE_END
    except OSError:
        return False
    return (
        complete and stamp == REPLAY_STAMP.encode() and written_for == f"<!-- {digest} -->".encode()
    )


def _write_page(path: Path, text: str) -> None:
    """Write a replay page in place (no temporary file and rename): a page cut short by a
    crash lacks its end, so the next report redraws it."""
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write(text)


def _tail(text: str | None, lines: int = 12) -> str | None:
    if not text:
        return None
    return visible("\n".join(text.rstrip().splitlines()[-lines:]), multiline=True)


# ------------------------------------------------------------------ bot plots

PLOT_WORKERS = 2
PLOTS_PARALLEL_FROM = 4
"""Draw the bot pages' plots in worker processes from this many bots on."""

BotPlotJob = tuple[pd.DataFrame, list[tuple[str, pd.DataFrame]]]


class BotPlots:
    """Every bot's two plots (rating over games, score distribution), as SVG text, drawn
    in ``PLOT_WORKERS`` forked processes (each reusing its figures) while the caller
    goes on; inline for few bots or one core. Same text either way."""

    def __init__(self, report: Report, order: list[str]) -> None:
        history = thin(report.ratings.history)
        scores = [(bot, report.results.bot_scores(bot)) for bot in order]
        workers = min(PLOT_WORKERS, os.cpu_count() or 1, len(order))
        self._pool: Any = None
        self._pending: Any = None
        self._done: dict[str, tuple[str, str]] | None = None
        if workers < 2 or len(order) < PLOTS_PARALLEL_FROM:
            self._done = _draw_bot_plots((history, scores))
            return
        jobs: list[BotPlotJob] = [(history, scores[i::workers]) for i in range(workers)]
        self._pool = multiprocess.Pool(workers)
        self._pending = self._pool.map_async(_draw_bot_plots, jobs, chunksize=1)

    def result(self) -> dict[str, tuple[str, str]]:
        if self._done is None:
            self._done = {}
            for part in self._pending.get():
                self._done.update(part)
        return self._done

    def __enter__(self) -> BotPlots:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()


def _draw_bot_plots(job: BotPlotJob) -> dict[str, tuple[str, str]]:
    history, scores = job
    figures = BotFigures()
    return {
        bot: (figures.rating_svg(history, bot), figures.scores_svg(seats)) for bot, seats in scores
    }


# ------------------------------------------------------------------ bot metadata


def bot_metadata(config: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """Per bot name, what its folder's ``bot.toml`` says (language, author, description)
    and the folder's version (content hash), when the folder is still there."""
    from arena.play.build import content_hash
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


def _add_stored_identity(metadata: dict[str, dict[str, str]], store_path: Path | str) -> None:
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
    return Markup(_nav_template().render(p=prefix, here=here))


@functools.cache
def _nav_template() -> jinja2.Template:
    """Compiled once per process (a replay page each: compiling took most of its time)."""
    return jinja2.Environment(autoescape=True).from_string(
        '<nav class="az-nav"><a href="{{ p }}index.html">Leaderboard</a>'
        '<a href="{{ p }}games.html">Games</a>'
        '<a href="{{ p }}report.html">All tables</a>'
        "{% if here %}<span>{{ here }}</span>{% endif %}</nav>"
    )


def _site_page(title: str, body: str, prefix: str, script: bool = False) -> str:
    extra = f'<script src="{prefix}site.js"></script>' if script else ""
    # The site pages use the viewer's stylesheet (one file), and no viewer script.
    return page(title, body, asset_prefix=prefix, extra_script=extra, viewer=False)


def _settings(config: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not config:
        return [("settings", "not recorded in this store")]
    time = config.get("time") or {}
    try:  # stores from before clocks were selectable ran on the wall clock
        clock = TimeControl.model_validate({"clock": "wall", **time}).describe()
    except (ValidationError, TypeError):
        clock = "not recorded in this store"
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
    listing: Listing,
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
        n_games=listing.finished,
        n_listed=len(listing.recent),
    )
    return _site_page("Azul Arena — tournament report", body, "")


def games_page_name(number: int) -> str:
    """Page ``number`` of the games list: 1 is the newest games."""
    return "games.html" if number == 1 else f"games-{number}.html"


FAULTED_PAGE = "games-faulted.html"
_GAMES_PAGE = re.compile(r"games-(\d+|faulted)\.html")


def _write_games_pages(
    env: jinja2.Environment,
    folder: Path,
    listing: Listing,
    order: list[str],
    outdir: Path,
) -> Path:
    """The games pages (newest first, ``GAMES_PER_PAGE`` rows each) and the faulted
    games' page; pages an earlier, longer listing wrote are removed. Returns page 1."""
    rows = listing.recent
    chunks = [
        rows[max(0, end - GAMES_PER_PAGE) : end] for end in range(len(rows), 0, -GAMES_PER_PAGE)
    ]
    chunks = chunks or [[]]
    pages = [(games_page_name(n), f"{n}") for n in range(1, len(chunks) + 1)]
    if listing.faulted:
        pages.append((FAULTED_PAGE, "with faults"))
    view = f"arena view {shell_quote(str(outdir))} --game GAME_ID"
    written = set()
    for number, chunk in enumerate(chunks, start=1):
        name = games_page_name(number)
        title = f"games {chunk[0].index}–{chunk[-1].index}" if chunk else "no games"
        _write_text(
            folder / name, _games_page(env, chunk, order, listing, pages, name, title, view)
        )
        written.add(name)
    if listing.faulted:
        title = f"the last {len(listing.faulted)} games with a fault"
        text = _games_page(env, listing.faulted, order, listing, pages, FAULTED_PAGE, title, view)
        _write_text(folder / FAULTED_PAGE, text)
        written.add(FAULTED_PAGE)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if _GAMES_PAGE.fullmatch(entry.name) and entry.name not in written:
                Path(entry.path).unlink(missing_ok=True)
    return folder / "games.html"


def _games_page(
    env: jinja2.Environment,
    rows: list[GameRow],
    order: list[str],
    listing: Listing,
    pages: list[tuple[str, str]],
    here: str,
    title: str,
    view: str,
) -> str:
    body = env.get_template("games.html").render(
        n_games=len(rows),
        title=title,
        finished=listing.finished,
        listed=len(listing.recent),
        pages=pages,
        here=here,
        view_command=view,
        replayed=sum(r.replayed for r in rows),
        table_rows=Markup(games_table_rows(rows)),
        bots=order,
        player_counts=sorted({r.n_players for r in rows}),
        variants=sorted({r.variant for r in rows}),
        ends=sorted({r.end_reason for r in rows}),
        fault_kinds=sorted({kind for r in rows for _, kind in r.faults}),
    )
    return _site_page("Azul Arena — games", body, "", script=True)


def games_table_rows(rows: Iterable[GameRow]) -> str:
    """The games table's rows: plain string building, every text escaped (bot labels
    once each). A template loop took ~0.1 ms a game: seconds at 100,000 games."""
    esc = functools.cache(lambda text: html.escape(str(text), quote=True))
    link = functools.cache(lambda name: f'<a href="bots/{esc(slug(name))}.html">{esc(name)}</a>')
    out: list[str] = []
    add = out.append
    for g in rows:
        seats = " · ".join(
            f"{link(p)} {g.totals[i]}\n(#{g.ranks[i]})" for i, p in enumerate(g.players)
        )
        faults = "".join(f"{esc(g.players[seat])}: {esc(kind)} " for seat, kind in g.faults)
        game = (
            f'<a href="{esc(g.href)}">{esc(g.game_id)}</a>'
            if g.replayed
            else f'<span title="arena view draws it">{esc(g.game_id)}</span>'
        )
        add(
            f'<tr data-bots="{esc(chr(10).join(g.players))}" data-players="{g.n_players}"\n'
            f' data-variant="{esc(g.variant)}" data-end="{esc(g.end_reason)}"\n'
            f' data-faults="{esc(" ".join(kind for _, kind in g.faults))}">\n'
            f'<td>{g.index}</td><td class="az-text">{game}'
            f"</td>\n<td>{g.n_players}</td><td>{esc(g.variant)}</td>"
            f'<td class="az-text">{seats}</td><td>{g.rounds}</td><td>{esc(g.end_reason)}</td>\n'
            f'<td class="az-text">{faults}</td></tr>\n'
        )
    return "".join(out)


def _bot_page(
    env: jinja2.Environment,
    report: Report,
    bot: str,
    losses: list[dict[str, Any]],
    faults: dict[str, FaultGroup],
    metadata: dict[str, dict[str, str]],
    plots: tuple[str, str],
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
    pairs = report.head_to_head_pairs
    mine_pairs = pairs.loc[pairs["bot"] == bot]
    h2h = pairs_display(mine_pairs).drop(columns=["Bot", "Opponent"])
    body = env.get_template("bot.html").render(
        bot=bot,
        meta=facts,
        rating_plot=Markup(plots[0]),
        score_plot=Markup(plots[1]),
        h2h_head=[str(c) for c in h2h.columns],
        h2h_rows=[
            {"opponent": str(opponent), "cells": [str(v) for v in r]}
            for opponent, r in zip(mine_pairs["opponent"], h2h.itertuples(index=False), strict=True)
        ],
        faults=sorted(faults.values(), key=lambda g: -g.count),
        losses=losses,
    )
    return _site_page(f"{bot} — Azul Arena", body, "../")
