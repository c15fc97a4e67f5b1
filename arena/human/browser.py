"""A human in a browser: a page served on 127.0.0.1 that draws the board with the replay
viewer's code and takes clicks. The referee calls :meth:`BrowserSeat.decide` like any
seat; the page polls ``/state`` and answers with ``POST /move``.

Only this machine can reach the server (127.0.0.1), requests must name it as their host
(no DNS rebinding), and moves must carry the page's secret token (another local page
cannot play for you).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from arena.engine import Game, GameRecord
from arena.engine.tables import AnyMove
from arena.human.screen import draft_counts, fault_notices, played_text
from arena.protocol.messages import GameEnd, GameStart
from arena.referee.faults import Fault
from arena.referee.seats import Choice, freeze_resting
from arena.viewer.frames import position
from arena.viewer.page import asset, page, script_json

MAX_BODY = 4096


class BrowserSeat:
    """A seat played from a browser page (see the module docstring)."""

    def __init__(self, name: str = "human", port: int = 0) -> None:
        self.name = name
        self.token = secrets.token_urlsafe(18)
        self._cond = threading.Condition()
        self._version = 0
        self._state: dict[str, Any] = {"status": "starting"}
        self._options: list[str] = []
        self._req = 0
        self._answer: int | None = None
        self._game: Game | None = None
        self._names: list[str] = []
        self._seen_over = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        port = self.server.server_address[1]
        return f"http://127.0.0.1:{port}/"

    # ---------------------------------------------------------------- the Seat protocol

    def begin(self, start: GameStart) -> Fault | None:
        self._names = list(start.players)
        self._publish(
            {
                "status": "waiting",
                "seat": start.seat,
                "names": self._names,
                "variant": start.variant,
                "message": "The game starts; the other seats are thinking.",
            }
        )
        return None

    def decide(
        self, req_id: int, game: Game, options: list[AnyMove], time_left_ms: int, game_id: str
    ) -> Choice | Fault:
        freeze_resting()  # a person thinks for seconds: the bots wait frozen
        start = time.monotonic()
        self._game = game
        texts = [str(m) for m in options]
        names = self._names or [f"seat {i}" for i in range(game.n_players)]
        recent = [
            {"seat": seat, "move": str(move), "text": played_text(names[seat], move, taken)}
            for seat, move, taken in list(draft_counts(game.rounds[-1]))[-8:]
        ]
        with self._cond:
            self._req = req_id
            self._options = texts
            self._answer = None
        self._publish(
            {
                "status": "your_turn",
                "req": req_id,
                "frame": position(game),
                "options": texts,
                "time_left_ms": time_left_ms,
                "recent": recent,
                "chosen": None,
                "message": "Your turn: click a tile, then a pattern line or the floor.",
            }
        )
        with self._cond:
            answered = self._cond.wait_for(lambda: self._answer is not None, time_left_ms / 1000)
            index = self._answer
        if not answered or index is None:
            self._publish({"status": "waiting", "message": "Too late: the referee moved for you."})
            return Fault("timeout", f"no move within {time_left_ms} ms")
        self._publish(
            {
                "status": "waiting",
                "chosen": texts[index],
                "message": f"You played {texts[index]}; the other seats are thinking.",
            }
        )
        return Choice(index, (time.monotonic() - start) * 1000)

    def end(self, end: GameEnd) -> None:
        self._publish({"status": "waiting", "message": "Game over; the result is on its way."})

    def finish(self, record: GameRecord, final: Game) -> None:
        """The end screen, from the record: final position, ranks, and each seat's faults
        (a bot that faulted had its moves played at random: the page must say so)."""
        faulted = {f.seat: f.kind for f in record.faults if f.forfeit}
        self._publish(
            {
                "status": "over",
                "frame": position(final),
                "end_reason": record.end_reason,
                "results": [
                    {
                        "seat": f.seat,
                        "player": f.player,
                        "score": f.total,
                        "rank": f.rank,
                        "fault": faulted.get(f.seat),
                    }
                    for f in record.final
                ],
                "faults": fault_notices(record),
                "message": f"Game over ({record.end_reason}).",
            }
        )

    def abandon(self) -> None:
        return None

    # ---------------------------------------------------------------- server side

    def wait_seen(self, timeout_s: float) -> bool:
        """Wait until the page has fetched the final state (so the person sees the result)."""
        return self._seen_over.wait(timeout_s)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _publish(self, update: dict[str, Any]) -> None:
        with self._cond:
            self._version += 1
            self._state = {**self._state, **update, "version": self._version}
            if update.get("status") != "your_turn":
                self._state.pop("options", None)
            self._cond.notify_all()

    def state(self) -> dict[str, Any]:
        with self._cond:
            state = dict(self._state)
        if state.get("status") == "over":
            self._seen_over.set()
        return state

    def submit(self, req: object, move: object) -> str | None:
        """A move from the page; returns an error message or None when accepted."""
        with self._cond:
            if self._state.get("status") != "your_turn" or req != self._req:
                return "it is not your turn (or that request has expired)"
            if not isinstance(move, str) or move not in self._options:
                return f"not a legal move: {move!r}"
            self._answer = self._options.index(move)
            self._cond.notify_all()
        return None

    def page_html(self) -> str:
        boot = script_json({"token": self.token, "name": self.name})
        body = (
            '<main class="az-viewer az-play"><h1>Azul Arena — you are playing</h1>'
            '<div class="az-sub" id="play-status" data-testid="status">Connecting…</div>'
            '<div class="az-main"><div id="play-board"></div><div class="az-side">'
            '<div class="az-card"><h2>Your legal moves</h2><div id="play-options"></div></div>'
            '<div class="az-card"><h2>Last moves</h2><div id="play-recent"></div></div>'
            '<div class="az-card" id="play-result" hidden></div></div></div></main>'
            f'<script type="application/json" id="play-boot">{boot}</script>'
        )
        script = "<script>" + asset("play.js").replace("</script", "<\\/script") + "</script>"
        return page(f"{self.name} — Azul Arena", body, extra_script=script)


def _handler(seat: BrowserSeat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "azul-arena"

        def log_message(self, format: str, *args: Any) -> None:
            return None  # the terminal belongs to the game's output

        def _host_ok(self) -> bool:
            port = seat.server.server_address[1]
            return self.headers.get("Host") in (f"127.0.0.1:{port}", f"localhost:{port}")

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            self._send(status, json.dumps(data).encode(), "application/json")

        def do_GET(self) -> None:
            if not self._host_ok():
                return self._json(HTTPStatus.FORBIDDEN, {"error": "wrong host"})
            path = self.path.split("?")[0]
            if path == "/":
                return self._send(
                    HTTPStatus.OK, seat.page_html().encode(), "text/html; charset=utf-8"
                )
            if path == "/state":
                return self._json(HTTPStatus.OK, seat.state())
            return self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})

        def do_POST(self) -> None:
            if not self._host_ok() or self.headers.get("X-Arena-Token") != seat.token:
                return self._json(HTTPStatus.FORBIDDEN, {"error": "not this game's page"})
            if self.path != "/move":
                return self._json(HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if not 0 < length <= MAX_BODY:
                return self._json(HTTPStatus.BAD_REQUEST, {"error": "bad request body"})
            try:
                data = json.loads(self.rfile.read(length))
            except ValueError:
                return self._json(HTTPStatus.BAD_REQUEST, {"error": "the body is not JSON"})
            if not isinstance(data, dict):
                return self._json(HTTPStatus.BAD_REQUEST, {"error": "the body is not an object"})
            error = seat.submit(data.get("req"), data.get("move"))
            if error is not None:
                return self._json(HTTPStatus.CONFLICT, {"error": error})
            return self._json(HTTPStatus.OK, {"ok": True})

    return Handler
