"""Game records: a JSON document from which a finished game can be re-executed exactly.

A record holds the tiles dealt each round and every decision, so replaying it
needs no RNG; it also holds the per-round and final scores, so a replay can
prove the referee scored the game right. Moves are written in a compact
notation (``3:R>2`` = factory 3, red, pattern line 2; ``C:K>F`` = centre,
black, floor; ``col4`` = gray-wall column 4).

>>> parse_move("C:K>F")
Move(source=-1, colour=3, line=-1)
>>> parse_move("col2")
Place(column=2)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from arena.engine.tables import (
    CENTRE,
    CODE_COUNTS,
    FLOOR,
    LETTERS,
    MOVE_OF,
    N_COLOURS,
    PLACES,
    AnyMove,
    Move,
    Place,
)

if TYPE_CHECKING:
    from arena.engine.game import Deal, Game

RECORD_FORMAT: Literal["azul-arena/game-record"] = "azul-arena/game-record"
RECORD_VERSION = 1

FaultKind = Literal["timeout", "crash", "malformed", "illegal", "init"]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
"""Every kind of fault a record can hold, in the order reports show them."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecisionRecord(_Model):
    seat: int = Field(ge=0, le=3, description="Seat that made the decision.")
    move: str = Field(description="Compact move notation, e.g. '3:R>2', 'C:K>F', 'col4'.")
    think_ms: float | None = Field(
        default=None,
        description="Bot think time as measured by the referee: wall time, request to reply.",
    )
    cpu_ms: float | None = Field(
        default=None,
        description="CPU time the bot's process tree used meanwhile (absent when not "
        "measured, and in older records).",
    )
    between_ms: float | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # frozen bots (the usual case) look the same
        description="CPU time the bot used after its previous reply and before this request "
        "(pondering): charged to this decision on CPU clocks; absent when ~0.",
    )
    auto: bool = Field(
        default=False, description="Played by the referee's random policy for a faulted bot."
    )
    stderr: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,  # old and quiet records look the same
        description="What the bot wrote to stderr while deciding (capped; absent when nothing).",
    )


class RoundRecord(_Model):
    number: int = Field(ge=1)
    first_player: int = Field(ge=0, le=3)
    factories: list[str] = Field(
        description="Tiles dealt to each factory, as colour letters (B Y R K W); '' when empty."
    )
    decisions: list[DecisionRecord]
    scores: list[int] = Field(description="Scores after this round's wall tiling.")


class FinalScore(_Model):
    seat: int
    player: str
    rounds: int = Field(description="Score after the last round, before bonuses.")
    rows: int = Field(description="Bonus for complete rows (+2 each).")
    columns: int = Field(description="Bonus for complete columns (+7 each).")
    colours: int = Field(description="Bonus for colours with all 5 tiles placed (+10 each).")
    total: int
    rank: int = Field(ge=1, description="1 = best; equal ranks are a tie.")
    full_rows: int | None = Field(
        default=None,
        ge=0,
        le=5,
        exclude_if=lambda value: value is None,  # older records look as they were
        description="Complete horizontal rows of the wall (the tie-break); absent in older "
        "records.",
    )


class FaultRecord(_Model):
    seat: int
    kind: FaultKind
    round: int
    message: str = Field(description="What went wrong, in plain words.")
    last_message: str | None = Field(default=None, description="The bot's last output line.")
    stderr_tail: str | None = Field(default=None, description="The end of the bot's stderr.")
    forfeit: bool = Field(description="The seat forfeited the game (ranks last).")


class WarningRecord(_Model):
    """A decision over the soft limit but within the hard one: the move counted."""

    seat: int
    round: int
    message: str = Field(description="How long it took, against which limits.")


class GameRecord(_Model):
    """Everything needed to re-execute and verify one game."""

    format: Literal["azul-arena/game-record"] = RECORD_FORMAT
    version: int = RECORD_VERSION
    variant: Literal["coloured", "gray"]
    n_players: int = Field(ge=2, le=4)
    players: list[str]
    seed: int | None
    round_limit: int
    rounds: list[RoundRecord]
    final: list[FinalScore]
    end_reason: Literal["normal", "round_limit", "no_tiles"]
    faults: list[FaultRecord] = Field(default_factory=list)
    clock: Literal["cpu", "wall"] | None = Field(
        default=None,
        description="What decisions were charged: CPU time or wall time (absent in older records).",
    )
    warnings: list[WarningRecord] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,  # games without warnings look as they always did
        description="Decisions over the soft time limit, within the hard one (in order; "
        "absent when none).",
    )


# --------------------------------------------------------------------- notation


_MOVE_RE = re.compile(r"(C|[0-8]):([BYRKW])>([0-4]|F)")


def parse_move(text: str) -> AnyMove:
    """Parse compact move notation exactly; raises ValueError on anything else."""
    if len(text) == 4 and text.startswith("col") and text[3] in "01234":
        return PLACES[int(text[3])]
    match = _MOVE_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"not a move: {text!r}")
    src, letter, dest = match.groups()
    source = CENTRE if src == "C" else int(src)
    line = FLOOR if dest == "F" else int(dest)
    return MOVE_OF[(source, LETTERS.index(letter), line)]


def deal_text(deal: Deal) -> list[str]:
    """Per factory, the dealt tiles as letters in colour order: ``[[2,0,1,0,1]] -> ['BBRW']``."""
    return ["".join(LETTERS[c] * counts[c] for c in range(N_COLOURS)) for counts in deal]


def parse_deal(factories: Sequence[str]) -> Deal:
    deal = []
    for text in factories:
        counts = [0] * N_COLOURS
        for letter in text:
            if letter not in LETTERS:
                raise ValueError(f"not a colour letter: {letter!r} in {text!r}")
            counts[LETTERS.index(letter)] += 1
        deal.append(counts)
    return deal


# ------------------------------------------------------------------- ranking


def rank_seats(keys: Sequence[tuple[int, int]], forfeited: Sequence[int] = ()) -> list[int]:
    """Competition ranks from (score, complete rows); forfeited seats share the last rank.

    >>> rank_seats([(30, 1), (30, 2), (12, 0)])
    [2, 1, 3]
    >>> rank_seats([(30, 1), (30, 1), (12, 0)])
    [1, 1, 3]
    >>> rank_seats([(50, 1), (30, 1), (12, 0)], forfeited=[0])
    [3, 1, 2]
    """
    out = []
    playing = [k for seat, k in enumerate(keys) if seat not in forfeited]
    for seat, key in enumerate(keys):
        if seat in forfeited:
            out.append(len(playing) + 1)
        else:
            out.append(1 + sum(1 for other in playing if other > key))
    return out


def record_data(
    game: Game,
    players: Sequence[str] | None = None,
    forfeited: Sequence[int] = (),
    decisions: Sequence[list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The record of ``game`` (which must be over) as plain JSON-ready data.

    ``decisions``: per round, its decisions as the caller made them (the referee's,
    with its per-decision facts: ``think_ms``, ``auto``, ...; each move spelled by
    :data:`MOVE_TEXT`), so that each is built once; else ``{"seat", "move"}`` only.
    The referee adds its ``faults`` (``arena.referee.GameOutcome``); :func:`build_record`
    validates the data as it is.
    """
    if not game.is_over() or game.end_reason is None:
        raise ValueError("the game is not over yet")
    names = list(players) if players is not None else [f"seat{i}" for i in range(game.n_players)]
    if len(names) != game.n_players:
        raise ValueError(f"{len(names)} player names for {game.n_players} players")
    logs = game.rounds
    if decisions is None:
        notation = MOVE_TEXT
        decisions = [
            [
                {"seat": seat, "move": notation.get(move) or str(move)}
                for seat, move in log.decisions
            ]
            for log in logs
        ]
    elif len(decisions) != len(logs):
        raise ValueError(f"decisions for {len(decisions)} rounds, the game had {len(logs)}")
    rounds = [
        {
            "number": log.number,
            "first_player": log.first_player,
            "factories": [_CODE_TEXT[code] for code in log.codes],
            "decisions": made,
            "scores": list(log.scores),
        }
        for log, made in zip(logs, decisions, strict=True)
    ]
    breakdowns = game.breakdowns()
    ranks = rank_seats(
        [(b.total, board.full_rows()) for b, board in zip(breakdowns, game.boards, strict=True)],
        forfeited,
    )
    final = [
        {
            "seat": seat,
            "player": names[seat],
            "rounds": b.rounds,
            "rows": b.rows,
            "columns": b.columns,
            "colours": b.colours,
            "total": b.total,
            "rank": ranks[seat],
            "full_rows": game.boards[seat].full_rows(),
        }
        for seat, b in enumerate(breakdowns)
    ]
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "variant": game.variant.value,
        "n_players": game.n_players,
        "players": names,
        "seed": game.seed,
        "round_limit": game.round_limit,
        "rounds": rounds,
        "final": final,
        "end_reason": game.end_reason.value,
        "faults": [],
    }


def build_record(
    game: Game,
    players: Sequence[str] | None = None,
    forfeited: Sequence[int] = (),
) -> GameRecord:
    """Record of ``game`` (which must be over), validated once from plain data."""
    return GameRecord.model_validate(record_data(game, players, forfeited))


MOVE_TEXT: dict[AnyMove, str] = {move: str(move) for move in MOVE_OF.values()}
"""Every move (draft and placement) in the record's notation: ``MOVE_TEXT[move]`` is
``str(move)`` without the call."""
MOVE_TEXT.update({place: str(place) for place in PLACES})
_CODE_TEXT: tuple[str, ...] = tuple(
    "".join(LETTERS[c] * counts[c] for c in range(N_COLOURS)) for counts in CODE_COUNTS
)
"""A factory code's tiles as letters in colour order (the record's ``factories``)."""


__all__ = [
    "FAULT_KINDS",
    "MOVE_TEXT",
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "DecisionRecord",
    "FaultKind",
    "FaultRecord",
    "FinalScore",
    "GameRecord",
    "Move",
    "Place",
    "RoundRecord",
    "WarningRecord",
    "build_record",
    "deal_text",
    "parse_deal",
    "parse_move",
    "rank_seats",
    "record_data",
]
