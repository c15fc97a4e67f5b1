"""Re-execute a game record with no RNG and check every fact it states.

Checks: each round's deal was drawable from the bag/lid at that moment, the
first player of each round, whose turn each decision was, that each decision
was legal, every per-round score, the end reason, the final scores with their
bonus breakdown, and the ranks (including forfeits recorded as faults).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from arena.engine.game import Game, IllegalDeal
from arena.engine.record import GameRecord, build_record, parse_deal, parse_move


@dataclass(frozen=True)
class Divergence:
    """The first place where a record and the rules disagree."""

    where: str
    what: str
    recorded: object
    actual: object
    position: str
    """The position (text rendering) at the divergence."""

    def __str__(self) -> str:
        return (
            f"DIVERGENCE at {self.where}: {self.what}\n"
            f"  recorded: {self.recorded}\n"
            f"  actual:   {self.actual}\n\n{self.position}"
        )


class ReplayError(Exception):
    def __init__(self, divergence: Divergence) -> None:
        super().__init__(str(divergence))
        self.divergence = divergence


def replay(
    record: GameRecord,
    on_decision: Callable[[Game, str, int], None] | None = None,
) -> Game:
    """Re-execute ``record``; return the final game or raise :class:`ReplayError`.

    ``on_decision(game, move_text, seat)`` is called before each decision is
    applied (used by ``arena replay --show``).
    """

    def diverge(game: Game | None, where: str, what: str, recorded: object, actual: object) -> None:
        position = game.render() if game is not None else "(no position: the game could not start)"
        raise ReplayError(Divergence(where, what, recorded, actual, position))

    try:
        deals = [parse_deal(r.factories) for r in record.rounds]
    except ValueError as exc:
        diverge(None, "deals", str(exc), "", "")
        raise AssertionError from exc  # unreachable: diverge raises
    if not record.rounds:
        diverge(None, "rounds", "the record has no rounds", "at least one", 0)
    if len(record.players) != record.n_players:
        diverge(None, "header", "number of player names", record.n_players, len(record.players))
    try:
        game = Game.new(
            players=record.n_players,
            variant=record.variant,
            seed=record.seed,
            round_limit=record.round_limit,
            deals=deals,
        )
    except IllegalDeal as exc:
        diverge(None, "round 1 deal", str(exc), record.rounds[0].factories, "not drawable")
        raise AssertionError from exc
    for rnd in record.rounds:
        where = f"round {rnd.number}"
        if game.is_over():
            diverge(game, where, "the game was already over", "another round", game.end_reason)
        if rnd.number != game.round:
            diverge(game, where, "round number", rnd.number, game.round)
        if rnd.first_player != game.first_player:
            diverge(game, where, "first player", rnd.first_player, game.first_player)
        for i, dec in enumerate(rnd.decisions):
            here = f"{where}, decision {i + 1} ({dec.move} by seat {dec.seat})"
            if game.round != rnd.number:
                diverge(game, here, "the round had already ended", rnd.number, game.round)
            if dec.seat != game.current_player:
                diverge(game, here, "seat to move", dec.seat, game.current_player)
            try:
                move = parse_move(dec.move)
            except ValueError as exc:
                diverge(game, here, str(exc), dec.move, "unparsable")
            legal = game.legal_moves()
            if move not in legal:
                diverge(game, here, "illegal decision", dec.move, [str(m) for m in legal])
            if on_decision is not None:
                on_decision(game, dec.move, dec.seat)
            snapshot = game.copy() if i == len(rnd.decisions) - 1 else None
            try:
                game.apply(move)
            except IllegalDeal as exc:
                diverge(snapshot, f"round {rnd.number + 1} deal", str(exc), "recorded deal", "")
        if game.round == rnd.number and not game.is_over():
            diverge(game, where, "the round did not end after its recorded decisions", "end", "")
        actual_scores = game.rounds[rnd.number - 1].scores
        if rnd.scores != actual_scores:
            diverge(game, where, "scores after wall tiling", rnd.scores, actual_scores)
    if not game.is_over():
        diverge(game, "end", "the game is not over after the last round", "over", "still playing")
    if game.end_reason is None or record.end_reason != game.end_reason.value:
        diverge(game, "end", "end reason", record.end_reason, game.end_reason)
    forfeited = sorted({f.seat for f in record.faults if f.forfeit})
    expected = build_record(game, record.players, forfeited).final
    for mine, theirs in zip(record.final, expected, strict=True):
        if mine.full_rows is None:  # an older record: it did not state its full rows
            theirs = theirs.model_copy(update={"full_rows": None})
        if mine != theirs:
            diverge(game, f"final score of seat {mine.seat}", "final score", mine, theirs)
    return game
