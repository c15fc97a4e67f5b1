"""Game records and replay: a finished game re-executes exactly, and a record
that disagrees with the rules anywhere is rejected with a ReplayError."""

from __future__ import annotations

import random
from typing import Any, Literal, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from arena.engine import (
    CENTRE,
    FLOOR,
    LETTERS,
    Game,
    GameRecord,
    Move,
    Place,
    ReplayError,
    parse_move,
    replay,
)
from arena.engine.record import MOVE_TEXT, parse_deal, record_data

from .helpers import play_out, random_policy
from .reference import RefGame, RefIllegal

EndReasonText = Literal["normal", "round_limit", "no_tiles"]
FAST = settings(max_examples=50, deadline=None)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
players_st = st.sampled_from([2, 3, 4])
variants = st.sampled_from(["coloured", "gray"])


def played(players: int, variant: str, seed: int, move_seed: int, round_limit: int = 100) -> Game:
    game = Game.new(players=players, variant=variant, seed=seed, round_limit=round_limit)
    play_out(game, random_policy(random.Random(move_seed)))
    return game


def names(n: int) -> list[str]:
    return [f"bot-{i}" for i in range(n)]


def history(game: Game) -> list[Any]:
    return [
        (log.number, log.first_player, [list(f) for f in log.factories], log.decisions, log.scores)
        for log in game.rounds
    ]


def assert_same_game(a: Game, b: Game) -> None:
    assert a.observation_dict() == b.observation_dict()
    assert a.scores() == b.scores()
    assert a.end_reason == b.end_reason
    assert a.ranks() == b.ranks()
    assert a.breakdowns() == b.breakdowns()
    assert history(a) == history(b)


# =====================================================================  faithful replay


@FAST
@given(players=players_st, variant=variants, seed=seeds, move_seed=seeds)
def test_replay_reproduces_the_game(players: int, variant: str, seed: int, move_seed: int) -> None:
    game = played(players, variant, seed, move_seed)
    record = game.record(names(players))
    again = replay(record)
    assert_same_game(game, again)
    assert again.record(names(players)) == record
    # JSON round trip.
    text = record.model_dump_json()
    parsed = GameRecord.model_validate_json(text)
    assert parsed == record
    assert_same_game(game, replay(parsed))


@settings(max_examples=25, deadline=None)
@given(
    players=players_st,
    variant=variants,
    seed=seeds,
    move_seed=seeds,
    round_limit=st.integers(1, 4),
)
def test_replay_of_round_limit_games(
    players: int, variant: str, seed: int, move_seed: int, round_limit: int
) -> None:
    game = played(players, variant, seed, move_seed, round_limit)
    record = game.record()
    assert record.round_limit == round_limit
    assert_same_game(game, replay(GameRecord.model_validate_json(record.model_dump_json())))


@FAST
@given(players=players_st, variant=variants, seed=seeds, move_seed=seeds)
def test_record_contents_follow_the_game(
    players: int, variant: str, seed: int, move_seed: int
) -> None:
    game = played(players, variant, seed, move_seed)
    record = game.record(names(players))
    assert record.variant == variant and record.n_players == players
    assert record.players == names(players)
    assert record.seed == seed
    assert record.end_reason == game.end_reason.value  # type: ignore[union-attr]
    assert len(record.rounds) == game.round == len(game.rounds)
    ref_check_deals(record, players, variant)
    for number, (rnd, log) in enumerate(zip(record.rounds, game.rounds, strict=True), start=1):
        assert rnd.number == number
        assert rnd.first_player == log.first_player
        assert parse_deal(rnd.factories) == [list(f) for f in log.factories]
        for text in rnd.factories:
            assert list(text) == sorted(text, key=LETTERS.index)
        assert [(d.seat, parse_move(d.move)) for d in rnd.decisions] == log.decisions
        assert rnd.scores == log.scores
    scores, ranks = game.scores(), game.ranks()
    for seat, final in enumerate(record.final):
        assert final.seat == seat and final.player == names(players)[seat]
        assert (
            final.total
            == scores[seat]
            == final.rounds + final.rows + final.columns + (final.colours)
        )
        assert final.rank == ranks[seat]
    if variant == "coloured":
        assert not any(d.move.startswith("col") for r in record.rounds for d in r.decisions)


def ref_check_deals(record: GameRecord, players: int, variant: str) -> None:
    """Re-play the record on the reference model: deals drawable, same scores."""
    ref = RefGame(players, variant, record.round_limit)
    for rnd in record.rounds:
        ref.deal(parse_deal(rnd.factories))
        assert ref.first == rnd.first_player
        for dec in rnd.decisions:
            assert dec.seat == ref.current
            ref.apply(parse_move(dec.move))
        assert ref.round_scores[-1] == rnd.scores
    assert ref.end_reason == record.end_reason
    assert [f.total for f in record.final] == ref.final_scores()
    assert [f.rank for f in record.final] == ref.ranks()


def test_record_needs_a_finished_game_and_one_name_per_seat() -> None:
    game = Game.new(players=3, seed=1)
    with pytest.raises(ValueError):
        game.record()
    play_out(game, random_policy(random.Random(1)))
    with pytest.raises(ValueError):
        game.record(["a", "b"])
    assert game.record().players == ["seat0", "seat1", "seat2"]


def test_record_data_takes_the_callers_decisions_one_list_per_round() -> None:
    game = Game.new(players=2, seed=5)
    play_out(game, random_policy(random.Random(5)))
    made = [
        [
            {"seat": seat, "move": MOVE_TEXT[move], "note": i}
            for i, (seat, move) in enumerate(log.decisions)
        ]
        for log in game.rounds
    ]
    data = record_data(game, ["a", "b"], decisions=made)
    assert [r["decisions"] for r in data["rounds"]] == made
    plain = record_data(game, ["a", "b"])
    assert [[{k: d[k] for k in ("seat", "move")} for d in r] for r in made] == [
        r["decisions"] for r in plain["rounds"]
    ]
    with pytest.raises(ValueError, match="rounds"):
        record_data(game, ["a", "b"], decisions=made[:-1])


def all_notations() -> list[Move | Place]:
    moves: list[Move | Place] = [
        Move(s, c, line)
        for s in [*range(9), CENTRE]
        for c in range(5)
        for line in [*range(5), FLOOR]
    ]
    return moves + [Place(c) for c in range(5)]


def test_move_notation_round_trips() -> None:
    for move in all_notations():
        assert parse_move(str(move)) == move
    assert str(Move(3, 2, 2)) == "3:R>2"
    assert str(Move(CENTRE, 3, FLOOR)) == "C:K>F"
    assert str(Place(4)) == "col4"


@pytest.mark.parametrize(
    "text", ["", "col5", "col", "colx", "C:X>F", "3:R>7", "9:R>2", "3:RR>2", "3R>2", "C:K>", "x"]
)
def test_bad_notation_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_move(text)


# =====================================================================  tampering

TAMPERS = [
    "round_score",
    "final_total",
    "final_rank",
    "final_breakdown",
    "illegal_move",
    "seat",
    "round1_deal_colour",
    "deal_drop_tile",
    "drop_round_last_decision",
    "drop_last_round",
    "extra_round",
    "end_reason",
    "first_player",
    "round_number",
    "round_limit",
    "player_names",
]


def position_before(record: GameRecord, round_index: int, decision_index: int) -> Game:
    """Re-execute the record up to (not including) one decision."""
    game = Game.new(
        players=record.n_players,
        variant=record.variant,
        round_limit=record.round_limit,
        deals=[parse_deal(r.factories) for r in record.rounds],
    )
    for i, rnd in enumerate(record.rounds):
        for k, dec in enumerate(rnd.decisions):
            if (i, k) == (round_index, decision_index):
                return game
            game.apply(parse_move(dec.move))
    raise AssertionError("no such decision")


def tamper(record: GameRecord, kind: str, rng: random.Random) -> GameRecord | None:
    """A copy of ``record`` changed in one place so that it contradicts the rules.

    Returns None when this record offers no place for that kind of change.
    """
    rec = record.model_copy(deep=True)
    n = rec.n_players
    rounds = rec.rounds
    r = rng.randrange(len(rounds))
    if kind == "round_score":
        rounds[r].scores[rng.randrange(n)] += rng.choice([1, 2, 7])
    elif kind == "final_total":
        rec.final[rng.randrange(n)].total += 1
    elif kind == "final_rank":
        seat = rng.randrange(n)
        rec.final[seat].rank = rec.final[seat].rank % n + 1
    elif kind == "final_breakdown":
        seat = rng.randrange(n)
        rec.final[seat].rows += 2
        rec.final[seat].rounds -= 2  # same total, wrong split
    elif kind == "illegal_move":
        k = rng.randrange(len(rounds[r].decisions))
        legal = {str(m) for m in position_before(record, r, k).legal_moves()}
        illegal = [str(m) for m in all_notations() if str(m) not in legal]
        rounds[r].decisions[k].move = rng.choice(illegal)
    elif kind == "seat":
        dec = rounds[r].decisions[rng.randrange(len(rounds[r].decisions))]
        dec.seat = (dec.seat + rng.randrange(1, n)) % n
    elif kind == "round1_deal_colour":
        # The first move of round 1 takes colour c from a factory: recolour every c there.
        first = parse_move(rounds[0].decisions[0].move)
        assert isinstance(first, Move) and first.source != CENTRE
        old = LETTERS[first.colour]
        new = LETTERS[(first.colour + rng.randrange(1, 5)) % 5]
        rounds[0].factories[first.source] = rounds[0].factories[first.source].replace(old, new)
    elif kind == "deal_drop_tile":
        full = [i for i, f in enumerate(rounds[r].factories) if f]
        i = rng.choice(full)
        text = rounds[r].factories[i]
        j = rng.randrange(len(text))
        rounds[r].factories[i] = text[:j] + text[j + 1 :]
    elif kind == "drop_round_last_decision":
        rounds[r].decisions.pop()
    elif kind == "drop_last_round":
        if len(rounds) < 2:
            return None
        rounds.pop()
    elif kind == "extra_round":
        extra = rounds[-1].model_copy(deep=True)
        extra.number += 1
        rounds.append(extra)
    elif kind == "end_reason":
        others = [e for e in ("normal", "round_limit", "no_tiles") if e != rec.end_reason]
        rec.end_reason = cast(EndReasonText, rng.choice(others))
    elif kind == "first_player":
        rounds[r].first_player = (rounds[r].first_player + rng.randrange(1, n)) % n
    elif kind == "round_number":
        rounds[r].number += rng.choice([-1, 1])
    elif kind == "round_limit":
        if len(rounds) < 2:
            return None
        rec.round_limit = rng.randrange(1, len(rounds))
    elif kind == "player_names":
        rec.players = rec.players[:-1]
    else:
        raise AssertionError(kind)
    assert rec != record
    return rec


@settings(max_examples=200, deadline=None)
@given(
    players=players_st,
    variant=variants,
    seed=seeds,
    move_seed=seeds,
    kind=st.sampled_from(TAMPERS),
    tamper_seed=seeds,
)
def test_tampered_records_are_rejected(
    players: int, variant: str, seed: int, move_seed: int, kind: str, tamper_seed: int
) -> None:
    game = played(players, variant, seed, move_seed)
    record = game.record(names(players))
    bad = tamper(record, kind, random.Random(tamper_seed))
    if bad is None:
        return
    with pytest.raises(ReplayError):
        replay(bad)
    # Through JSON it is rejected too (by validation or by replay).
    try:
        parsed = GameRecord.model_validate_json(bad.model_dump_json())
    except ValidationError:
        return
    with pytest.raises(ReplayError):
        replay(parsed)


@pytest.mark.parametrize("kind", TAMPERS)
def test_each_tamper_kind_is_rejected(kind: str) -> None:
    for seed in range(6):
        players, variant = 2 + seed % 3, ["coloured", "gray"][seed % 2]
        record = played(players, variant, seed, seed + 100).record()
        bad = tamper(record, kind, random.Random(seed))
        assert bad is not None
        with pytest.raises(ReplayError):
            replay(bad)


def test_replay_rejects_a_deal_that_skips_bag_tiles() -> None:
    """A later-round deal that leaves a bag tile behind when the lid is poured is refused.

    The records are real games; the deal is changed by swapping one leftover bag
    tile of the factory filled when the bag ran out with a tile of a later
    factory: the deal's colour totals stay the same, only the draw order breaks.
    """
    found = 0
    for seed in range(500):
        if found >= 5:
            break
        game = Game.new(players=2, seed=seed)
        rng = random.Random(seed)
        bags: dict[int, list[int]] = {}
        while not game.is_over():
            bag, rnd = list(game.bag), game.round
            game.apply(rng.choice(game.legal_moves()))
            if game.round != rnd:
                bags[game.round] = bag  # the bag just before round game.round was dealt
        record = game.record()
        for number, bag in bags.items():
            deal = [list(f) for f in game.rounds[number - 1].factories]
            if not 0 < sum(bag) < 20 or sum(bag) % 4 == 0:
                continue
            i = sum(bag) // 4  # factory i is being filled when the bag runs out
            rem = [bag[c] - sum(deal[f][c] for f in range(i)) for c in range(5)]
            swap = [
                (a, b, j)
                for a in range(5)
                if rem[a] and deal[i][a] == rem[a]
                for j in range(i + 1, 5)
                for b in range(5)
                if b != a and deal[j][b]
            ]
            if not swap:
                continue
            a, b, j = swap[0]
            deal[i][a] -= 1
            deal[i][b] += 1
            deal[j][b] -= 1
            deal[j][a] += 1
            bad = record.model_copy(deep=True)
            bad.rounds[number - 1].factories = [
                "".join(LETTERS[c] * f[c] for c in range(5)) for f in deal
            ]
            # The reference model agrees the tampered deal is not drawable.
            ref = RefGame(2, "coloured")
            ref.bag = list(bag)
            ref.lid = [20 - bag[c] for c in range(5)]  # only the bag-first rule matters here
            with pytest.raises(RefIllegal):
                ref.deal(deal)
            with pytest.raises(ReplayError) as err:
                replay(bad)
            assert f"round {number}" in str(err.value)
            found += 1
            break
    assert found >= 5


def test_record_without_rounds_is_rejected() -> None:
    """A record whose rounds were all removed is a tampered record: ReplayError."""
    record = played(2, "coloured", 1, 1).record()
    bad = record.model_copy(deep=True)
    bad.rounds = []
    with pytest.raises(ReplayError):
        replay(bad)


@FAST
@given(players_st, variants, seeds, seeds)
def test_the_record_states_each_seats_full_rows(
    players: int, variant: str, seed: int, move_seed: int
) -> None:
    """The tie-break count is the record's own fact (reports no longer derive it from the
    row bonus); a record written before it was stated still verifies."""
    game = played(players, variant, seed, move_seed)
    record = game.record(names(players))
    for final, board in zip(record.final, game.boards, strict=True):
        assert final.full_rows == board.full_rows()
    older = record.model_dump(mode="json")
    for final in older["final"]:
        del final["full_rows"]
    replay(GameRecord.model_validate(older))
    claimed = record.model_dump(mode="json")
    rows = record.final[0].full_rows or 0
    claimed["final"][0]["full_rows"] = rows - 1 if rows else 1
    with pytest.raises(ReplayError, match="final score"):
        replay(GameRecord.model_validate(claimed))
