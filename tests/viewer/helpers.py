"""Game records for viewer tests, played by a seeded random policy through the engine."""

from __future__ import annotations

import random
from collections.abc import Sequence

from arena.engine import AnyMove, Game
from arena.engine.record import FaultRecord, GameRecord, build_record

HOSTILE = "</script><img src=x onerror=alert(1)>&amp;"


def random_record(
    players: int = 2,
    variant: str = "coloured",
    seed: int = 1,
    names: Sequence[str] | None = None,
    stderr: bool = False,
    fault_seat: int | None = None,
    greedy: bool = False,
) -> GameRecord:
    """A finished game (random moves, or one-ply greedy ones). With ``stderr`` each decision
    of seat 0 carries stderr lines; with ``fault_seat`` that seat forfeits in round 1 (its
    moves are marked ``auto``)."""
    rng = random.Random(seed)
    game = Game.new(players=players, variant=variant, seed=seed)
    while not game.is_over():
        moves = game.legal_moves()
        game.apply(max(moves, key=lambda m: value(game, m)) if greedy else rng.choice(moves))
    forfeited = [fault_seat] if fault_seat is not None else []
    record = build_record(game, names or [f"bot{i}" for i in range(players)], forfeited)
    rounds = []
    count = 0
    for rnd in record.rounds:
        decisions = []
        for dec in rnd.decisions:
            count += 1
            update: dict[str, object] = {"think_ms": round(rng.uniform(0.1, 9.0), 3)}
            if stderr and dec.seat == 0:
                update["stderr"] = f"considering move {count}\n{HOSTILE}\n"
            if dec.seat == fault_seat:
                update = {"auto": True}
            decisions.append(dec.model_copy(update=update))
        rounds.append(rnd.model_copy(update={"decisions": decisions}))
    faults = []
    if fault_seat is not None:
        faults.append(
            FaultRecord(
                seat=fault_seat,
                kind="malformed",
                round=1,
                message="the reply is not JSON",
                last_message=HOSTILE,
                stderr_tail="Traceback (most recent call last):\n" + HOSTILE,
                forfeit=True,
            )
        )
    return record.model_copy(update={"rounds": rounds, "faults": faults})


def value(game: Game, move: AnyMove) -> int:
    """One-ply look-ahead: my score after the move, minus what lies on my floor."""
    child = game.copy()
    me = child.current_player
    child.apply(move)
    return child.boards[me].score - len(child.boards[me].floor)
