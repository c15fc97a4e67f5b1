"""``arena view``: write self-contained HTML replays of game records."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from arena.engine import GameRecord, ReplayError
from arena.errors import ArenaError
from arena.recordio import RecordFileError, load_record
from arena.viewer.frames import viewer_data
from arena.viewer.page import replay_page


class ViewError(ArenaError):
    """Input the viewer cannot use, with a message for the user."""


@dataclass(frozen=True)
class GameSource:
    game_id: str | None
    load: Callable[[], GameRecord]


def replay_html(record: GameRecord, game_id: str | None = None) -> str:
    """One standalone HTML file (script and styles inline, no network) replaying ``record``."""
    try:
        data = viewer_data(record, game_id)
    except ReplayError as exc:
        raise ViewError(f"the record does not verify, so it cannot be drawn:\n{exc}") from None
    return replay_page(data)


def tournament_games(folder: Path, wanted: Sequence[str]) -> Iterator[GameSource]:
    """The finished games of a tournament folder (only ``wanted`` ids when given)."""
    from arena.store.tournament import Store, StoreError, store_location

    try:
        store = Store(store_location(folder), readonly=True)
    except StoreError as exc:
        raise ViewError(f"{folder}: not a record file nor a tournament folder ({exc})") from None
    with store:
        scheduled = {g.game_index: g.game_id for g in store.schedule()}
        unknown = set(wanted) - set(scheduled.values())
        if unknown:
            raise ViewError(f"{folder}: no game {sorted(unknown)[0]!r} in this tournament")
        finished = store.finished_indices()
        blobs = {}
        for index in sorted(finished):
            if wanted and scheduled[index] not in wanted:
                continue
            blobs[scheduled[index]] = store.record_json(index) or b""
    missing = [g for g in wanted if g not in blobs]
    if missing:
        raise ViewError(f"{folder}: game {missing[0]!r} has not been played yet")
    for game_id, blob in blobs.items():

        def load(blob: bytes = blob, game_id: str = game_id) -> GameRecord:
            try:
                return GameRecord.model_validate_json(blob)
            except ValidationError as exc:
                raise ViewError(f"{folder}: stored record of {game_id} is invalid: {exc}") from None

        yield GameSource(game_id, load)


def _plan(
    target: Path, games: Sequence[str], out: Path | None, out_is_folder: bool
) -> list[tuple[GameSource, Path]]:
    """The games of one record file or tournament folder, each with the page it is written to."""
    if target.is_dir():
        sources = list(tournament_games(target, games))
        if not sources:
            raise ViewError(f"{target}: no finished game to view yet")
        folder = out if out is not None else target / "replays"
        paths = [folder / f"{source.game_id}.html" for source in sources]
        if out is not None and out.suffix == ".html" and len(sources) == 1:
            paths = [out]
        return list(zip(sources, paths, strict=True))
    if games:
        raise ViewError("--game picks a game of a tournament folder, not of a record file")
    try:
        record = load_record(target)
    except RecordFileError as exc:
        raise ViewError(str(exc)) from None
    name = target.name.removesuffix(".gz").removesuffix(".json") + ".html"
    default = target.with_name(name)
    path = default if out is None else (out / name if out_is_folder or out.is_dir() else out)
    return [(GameSource(None, lambda: record), path)]


def write_views(
    targets: Sequence[Path],
    games: Sequence[str] = (),
    out: Path | None = None,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
) -> list[Path]:
    """Write the replay page(s) of record files and tournament folders; return their paths.

    A record file gives ``<name>.html`` beside it; a tournament folder gives
    ``OUTDIR/replays/<game id>.html``. ``out`` is a file (one game) or a folder. With
    ``open_browser`` the first replay of each target opens (one tab per target), so a glob
    over several matches shows every match.
    """
    if len(targets) > 1 and out is not None and out.suffix == ".html":
        raise ViewError("--out names one file, but several targets were given: pass a folder")
    plans = [_plan(target, games, out, len(targets) > 1) for target in targets]
    seen: dict[Path, Path] = {}
    for target, plan in zip(targets, plans, strict=True):
        for _, path in plan:
            if path in seen and seen[path] != target:
                raise ViewError(
                    f"{seen[path]} and {target} would both be written to {path}: "
                    "omit --out to write each replay beside its own record or folder"
                )
            seen[path] = target
    written: list[list[Path]] = []
    for plan in plans:
        written.append([])
        for source, path in plan:
            text = replay_html(source.load(), source.game_id)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)
            except OSError as exc:
                raise ViewError(f"cannot write {path}: {exc.strerror or exc}") from None
            written[-1].append(path)
    for paths in written:
        if len(paths) == 1:
            say(f"replay: {paths[0]}")
        else:
            say(f"{len(paths)} replays in {paths[0].parent}/")
    if open_browser:
        for paths in written:
            webbrowser.open(paths[0].resolve().as_uri())
    return [path for paths in written for path in paths]
