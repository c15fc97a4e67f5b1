"""``arena replay``: re-execute game records and verify every deal, move and score."""

from __future__ import annotations

import argparse
import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from arena.commands.output import UserError, console, print_evidence, shown

if TYPE_CHECKING:
    from arena.engine import Game
    from arena.engine.record import DecisionRecord, GameRecord


VERBOSE_UP_TO = 20
"""Up to this many records, each gets its summary line; beyond, only failures and a total."""
PROGRESS_EVERY = 500
"""Beyond those, the terminal's progress line is brought up to date every this many."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="re-execute game records and verify every deal, move and score",
        description=(
            "Re-execute a game record with no RNG: checks that every deal was drawable, "
            "every decision legal and every score right. Prints OK and a summary, or the "
            "first divergence with the position; exits 1 if any record diverges."
        ),
    )
    p.add_argument(
        "records",
        nargs="+",
        metavar="RECORD",
        help="game record (.json or .json.gz), or a tournament folder (every stored game)",
    )
    p.add_argument("--show", action="store_true", help="print the game turn by turn")
    p.add_argument(
        "--game",
        action="append",
        metavar="GAME_ID",
        help="with a tournament folder: only this game (repeatable)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from arena.engine import ReplayError, replay

    status = checked = total = 0
    # Streamed: a tournament folder of a million games is read one record at a time; a
    # summary per game only when there are few (the first VERBOSE_UP_TO + 1 tell).
    sources = _sources(args.records, args.game or [])
    first = list(itertools.islice(sources, VERBOSE_UP_TO + 1))
    verbose = args.show or len(first) <= VERBOSE_UP_TO
    # Many records: a line on the terminal that counts them (a million take a while).
    progress = contextlib.nullcontext() if verbose else console.status("replaying…")
    with progress as line:
        for label, record in itertools.chain(first, sources):
            total += 1
            if line is not None and total % PROGRESS_EVERY == 1:
                diverged = total - 1 - checked
                line.update(f"replaying: {checked:,} records verified, {diverged:,} diverged")
            try:
                game = replay(record, on_decision=_turn_printer(record) if args.show else None)
            except ReplayError as exc:
                console.print(f"[red]{escape(label)}: {escape(str(exc))}[/red]")
                status = 1
                continue
            checked += 1
            if args.show:
                console.print(f"\n{game.render(record.players)}")
            if verbose:
                _print_summary(label, record)
    if not total:
        raise UserError("no finished game to replay there")
    summary = f"{checked}/{total} records verified"
    console.print(f"[green]{summary}[/green]" if status == 0 else f"[red]{summary}[/red]")
    return status


def _sources(paths: Sequence[str], game_ids: Sequence[str]) -> Iterator[tuple[str, GameRecord]]:
    """(label, GameRecord) from record files and from tournament folders' stores."""
    from arena.recordio import load_record
    from arena.tournament.records import stored_records

    for text in paths:
        path = Path(text)
        if path.is_dir():
            yield from stored_records(path, game_ids)
        else:
            yield text, load_record(path)


def times_text(decision: DecisionRecord) -> str:
    """``"  (wall 3.1 ms, CPU 0.4 ms)"`` for ``replay --show``; empty when not measured."""
    parts = [
        f"{label} {value:.1f} ms"
        for label, value in (("wall", decision.think_ms), ("CPU", decision.cpu_ms))
        if value is not None
    ]
    if decision.auto:
        parts.append("played by the referee")
    return f"  ({', '.join(parts)})" if parts else ""


def _turn_printer(record: GameRecord) -> Callable[[Game, str, int], None]:
    """``replay --show``: the board at each draft's start, then every decision."""
    names = record.players
    times = iter([times_text(d) for r in record.rounds for d in r.decisions])

    def show(game: Game, move: str, seat: int) -> None:
        if game.rounds[-1].decisions == [] and game.decision.value == "draft":
            console.print(f"\n{game.render(names)}")
        spent = next(times, "")
        console.print(f"  round {game.round}  {names[seat]} (seat {seat}): {move}{spent}")

    return show


def _print_summary(label: str, record: GameRecord) -> None:
    names = record.players
    scores = ", ".join(f"{f.player} {f.total} (#{f.rank})" for f in record.final)
    decisions = sum(len(r.decisions) for r in record.rounds)
    console.print(
        f"[green]OK[/green] {escape(label)}: {record.n_players} players, "
        f"{record.variant} wall, "
        f"{len(record.rounds)} rounds, {decisions} decisions, "
        f"end {record.end_reason}; {scores}"
    )
    for warning in record.warnings:
        console.print(
            f"  warning: seat {warning.seat} ({shown(names[warning.seat])}) in round "
            f"{warning.round}: {shown(warning.message)}"
        )
    for fault in record.faults:
        console.print(
            f"  fault: seat {fault.seat} ({shown(names[fault.seat])}) {fault.kind} in "
            f"round {fault.round}: {shown(fault.message)}"
            + (" (forfeit)" if fault.forfeit else " (strike, forgiven)")
        )
        print_evidence(fault, "    ")
