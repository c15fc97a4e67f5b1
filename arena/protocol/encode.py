"""Fast encoding of the referee's hot-path message, ``decide``.

``decide`` is sent for every decision, so it is assembled from precomputed JSON
fragments (options, factories) and per-board fragments that are re-encoded only
when that board changed, instead of building and serialising pydantic models or
the whole observation dict. On the compiled engine the observation and the options come
from ``Game.observation_json()`` and ``moves_json()``, written in C (~0.4 µs each). The
tests check that every variant gives the same bytes as ``orjson`` of
:meth:`Game.observation_dict` and a valid pydantic ``Decide``.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from arena.engine import COMPILED, Board, Decision, EndReason, Game, Variant, moves_json
from arena.engine.tables import CODE_COUNTS, COLOURS, AnyMove

_COUNTS_JSON: tuple[bytes, ...] = tuple(orjson.dumps(list(counts)) for counts in CODE_COUNTS)
"""A factory's contents as JSON, by factory code."""
_CELL = {c: b"null" if c < 0 else b"%d" % c for c in range(-1, 5)}
_ROWS: dict[tuple[int, ...], bytes] = {}
"""A wall row's JSON by its cells (at most 6**5 distinct rows)."""
_LINE_JSON = {
    (colour, count): orjson.dumps({"colour": colour if count else None, "count": count})
    for colour in range(-1, 5)
    for count in range(6)
}
_TAIL = b',"colours":' + orjson.dumps(list(COLOURS)) + b"}"
_DRAFT = Decision.DRAFT
_NAME = {value: value.value.encode() for enum in (Decision, Variant, EndReason) for value in enum}
_FIVE = b"[%d,%d,%d,%d,%d]"
_BOARD = b'{"seat":%d,"score":%d,"lines":[%s,%s,%s,%s,%s],"wall":[%s],"floor":%s}'


def _list(values: Sequence[int]) -> bytes:
    return b"[" + b",".join([b"%d" % v for v in values]) + b"]"


def _row(cells: tuple[int, ...]) -> bytes:
    text = _ROWS[cells] = b"[" + b",".join([_CELL[c] for c in cells]) + b"]"
    return text


def wall_json(board: Board) -> bytes:
    """A board's ``wall`` as JSON (5 rows of 5 cells)."""
    wall = board.wall
    get = _ROWS.get
    r0, r1, r2, r3, r4 = (
        tuple(wall[0:5]),
        tuple(wall[5:10]),
        tuple(wall[10:15]),
        tuple(wall[15:20]),
        tuple(wall[20:25]),
    )
    return b"%s,%s,%s,%s,%s" % (
        get(r0) or _row(r0),
        get(r1) or _row(r1),
        get(r2) or _row(r2),
        get(r3) or _row(r3),
        get(r4) or _row(r4),
    )


def board_json(seat: int, board: Board, wall: bytes | None = None) -> bytes:
    """One entry of ``observation.players`` (same bytes as orjson of the view dict).

    ``wall``: the board's :func:`wall_json` when the caller knows it has not changed.
    """
    lc, ln = board.line_colour, board.line_count
    line = _LINE_JSON
    return _BOARD % (
        seat,
        board.score,
        line[lc[0], ln[0]],
        line[lc[1], ln[1]],
        line[lc[2], ln[2]],
        line[lc[3], ln[3]],
        line[lc[4], ln[4]],
        wall_json(board) if wall is None else wall,
        _list(board.floor) if board.floor else b"[]",
    )


class DecideEncoder:
    """Encodes the ``decide`` lines of one game, re-encoding only the boards that changed.

    Between two decisions of the same round's draft only the boards of the seats
    that moved change (read from the round's decision log); a new round or any
    wall tiling (gray-wall placements) re-encodes every board. The game must only
    change through :meth:`Game.apply`.
    """

    __slots__ = (
        "_bag",
        "_boards",
        "_decision",
        "_game",
        "_game_id",
        "_game_id_json",
        "_head",
        "_logged",
        "_round",
        "_walls",
    )

    def __init__(self, game: Game) -> None:
        self._game = game
        self._boards: list[bytes] = []
        self._walls: list[bytes] = []
        self._round = -1
        self._logged = 0
        self._decision: Decision | None = None
        self._game_id = ""
        self._game_id_json = b'""'
        self._head = b""
        """The observation's fields fixed within a round (variant ... round_limit)."""
        self._bag = b""
        """The bag, which only dealing changes (at the start of a round)."""

    def players_json(self) -> bytes:
        game = self._game
        log = game.rounds[-1].decisions
        logged = len(log)
        decision = game.decision
        boards = self._boards
        if (
            game.round != self._round
            or decision is not _DRAFT
            or self._decision is not _DRAFT
            or logged < self._logged
            or not boards
        ):
            walls = self._walls
            walls[:] = [wall_json(board) for board in game.boards]
            self._head = _HEAD % (
                _NAME[game.variant],
                game.n_players,
                game.round,
                game.round_limit,
            )
            self._bag = _FIVE % tuple(game.bag)
            boards[:] = [
                board_json(seat, board, walls[seat]) for seat, board in enumerate(game.boards)
            ]
        else:
            # Draft moves change lines, floors and the table, never walls (only tiling does).
            if logged == self._logged + 1:  # the usual case: one move since the last request
                seat = log[-1][0]
                boards[seat] = board_json(seat, game.boards[seat], self._walls[seat])
            else:
                for seat in {seat for seat, _ in log[self._logged : logged]}:
                    boards[seat] = board_json(seat, game.boards[seat], self._walls[seat])
        self._round = game.round
        self._logged = logged
        self._decision = decision
        return b",".join(boards)

    def observation_json(self) -> bytes:
        """The observation, byte for byte ``orjson.dumps(game.observation_dict())``."""
        game = self._game
        pending = game.pending_line
        end = game.end_reason
        return (
            b'{"variant":"%s","n_players":%d,"round":%d,"round_limit":%d,"decision":"%s",'
            b'"current_player":%d,"first_player":%d,"next_first_player":%d,"pending_line":%s,'
            b'"factories":[%s],"centre":%s,"marker_in_centre":%s,"bag":%s,"lid":%s,'
            b'"players":[%s],"end_reason":%s'
            % (
                _NAME[game.variant],
                game.n_players,
                game.round,
                game.round_limit,
                _NAME[game.decision],
                game.current_player,
                game.first_player,
                game.next_first_player,
                b"null" if pending is None else b"%d" % pending,
                b",".join([_COUNTS_JSON[code] for code in game.factories]),
                _five(tuple(game.centre)),
                b"true" if game.marker_in_centre else b"false",
                _FIVE % tuple(game.bag),
                _five(tuple(game.lid)),
                self.players_json(),
                b"null" if end is None else b'"%s"' % _NAME[end],
            )
            + _TAIL
        )

    def decide(
        self,
        req_id: int,
        game_id: str,
        seat: int,
        options: Sequence[AnyMove],
        time_left_ms: int,
    ) -> bytes:
        """One ``decide`` line (newline included): one formatting step, the usual case
        (one draft move since the last request) re-encoding the one board that moved."""
        if game_id != self._game_id:
            self._game_id = game_id
            self._game_id_json = orjson.dumps(game_id)
        game = self._game
        decision = game.decision
        if COMPILED:  # the C engine writes its observation in ~1 µs: nothing to keep
            # Joined, not formatted: ``%`` would scan and copy the 1-2 kB observation.
            return b"".join(
                (
                    _DECIDE_COMPILED_HEAD
                    % (req_id, self._game_id_json, seat, _NAME[decision], time_left_ms),
                    moves_json(options),
                    b',"observation":',
                    game.observation_json(),
                    b"}\n",
                )
            )
        boards = self._boards
        log = game.rounds[-1].decisions
        logged = len(log)
        if (
            logged == self._logged + 1
            and decision is _DRAFT
            and self._decision is _DRAFT
            and game.round == self._round
            and boards
        ):
            mover = log[-1][0]
            boards[mover] = board_json(mover, game.boards[mover], self._walls[mover])
            self._logged = logged
            players = b",".join(boards)
        else:
            players = self.players_json()
        pending = game.pending_line
        end = game.end_reason
        return _DECIDE % (
            req_id,
            self._game_id_json,
            seat,
            _NAME[decision],
            time_left_ms,
            moves_json(options),
            self._head,
            _NAME[decision],
            game.current_player,
            game.first_player,
            game.next_first_player,
            b"null" if pending is None else b"%d" % pending,
            b",".join([_COUNTS_JSON[code] for code in game.factories]),
            _five(tuple(game.centre)),
            b"true" if game.marker_in_centre else b"false",
            self._bag,
            _five(tuple(game.lid)),
            players,
            b"null" if end is None else b'"%s"' % _NAME[end],
        )


_FIVES: dict[tuple[int, ...], bytes] = {}


def _five(counts: tuple[int, ...]) -> bytes:
    """Five counts as a JSON list (cached: a game's centre and lid take few values)."""
    text = _FIVES.get(counts)
    if text is None:
        if len(_FIVES) > 50_000:
            _FIVES.clear()
        text = _FIVES[counts] = _FIVE % counts
    return text


_HEAD = b'"variant":"%s","n_players":%d,"round":%d,"round_limit":%d'
_DECIDE = (
    b'{"type":"decide","id":%d,"game_id":%s,"seat":%d,"decision":"%s",'
    b'"time_left_ms":%d,"options":%s,"observation":'
    b'{%s,"decision":"%s",'
    b'"current_player":%d,"first_player":%d,"next_first_player":%d,"pending_line":%s,'
    b'"factories":[%s],"centre":%s,"marker_in_centre":%s,"bag":%s,"lid":%s,'
    b'"players":[%s],"end_reason":%s' + _TAIL + b"}\n"
)
"""The whole ``decide`` line: the request's fields, then the observation's."""
_DECIDE_COMPILED_HEAD = (
    b'{"type":"decide","id":%d,"game_id":%s,"seat":%d,"decision":"%s","time_left_ms":%d,"options":'
)
"""The ``decide`` line up to the compiled engine's :func:`moves_json`, then its
:meth:`Game.observation_json`."""


_current: DecideEncoder | None = None


def encoder_for(game: Game) -> DecideEncoder:
    """The encoder of ``game``: the seats of one game share it, so each board is
    re-encoded once per change, not once per seat."""
    global _current
    if _current is None or _current._game is not game:
        _current = DecideEncoder(game)
    return _current


def encode_decide(
    req_id: int,
    game_id: str,
    seat: int,
    game: Game,
    options: Sequence[AnyMove],
    time_left_ms: int,
) -> bytes:
    """One ``decide`` line (newline included), incremental across calls for one game."""
    encoder = _current
    if encoder is None or encoder._game is not game:
        encoder = encoder_for(game)
    return encoder.decide(req_id, game_id, seat, options, time_left_ms)


def encode(message: object) -> bytes:
    """Any protocol model as one line (newline included)."""
    dump = getattr(message, "model_dump_json", None)
    if dump is None:
        raise TypeError(f"not a protocol message: {message!r}")
    text: str = dump(exclude_none=False)
    return (text + "\n").encode()
