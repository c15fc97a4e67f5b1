"""A small competition for the web tests: a temporary SQLite store with an organiser, two
authors with bots, real finished games (records replayable by the viewer) and stderr, and
hostile text wherever a bot or an author controls it."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import random
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from arena.competition.config import CompetitionConfig, ServerSection
from arena.engine import Game
from arena.server.app import ServerContext, WebSettings, create_app
from arena.store.competition import (
    CompetitionStore,
    FinishedFault,
    FinishedSeat,
    GameOutcome,
    sqlite_url,
)

XSS = "<script>alert(1)</script>"
"""Markup that must never reach a page unescaped."""
EVIL_BOT = f"evil{XSS}\x1b[2J"
"""A bot name no manifest allows, stored directly (the pages must not trust the store)."""
ALICE_STDERR = "alice-secret-stderr"
BOB_STDERR = "bob-secret-stderr"


@dataclass
class Site:
    store: CompetitionStore
    client: TestClient
    data_dir: Path
    tokens: dict[str, str]
    """Raw token by author name (organiser: ``org``)."""
    games: list[str] = field(default_factory=list)
    woken: dict[str, int] = field(default_factory=lambda: {"builder": 0, "ladder": 0})

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def sign_in(self, who: str) -> str:
        """Sign the client in through the login form; the CSRF token of the session."""
        csrf = csrf_of(self.client)
        response = self.client.post(
            "/login", data={"token": self.tokens[who], "csrf": csrf}, follow_redirects=False
        )
        assert response.status_code == 303, response.text
        return csrf


def csrf_of(client: TestClient) -> str:
    """Visit a page to get a CSRF cookie; its value."""
    client.get("/login")
    value = client.cookies.get("arena_csrf")
    assert value
    return str(value)


def activate(
    store: CompetitionStore, author_id: int, name: str, *, verdict: str = "accepted", **meta: Any
) -> int:
    """Submit and accept a version of ``name``; its version id."""
    store.add_submission(author_id, name, f"/uploads/{name}.zip", "0" * 64)
    claimed = store.claim_queued_version()
    assert claimed is not None and claimed.bot_name == name
    done = store.finish_build(
        claimed.id,
        True,
        verdict,
        f"build log of {name}",
        f"/built/{name}",
        "c" * 12,
        {"language": meta.get("language", "python"), "manifest": {"name": name}, **meta},
    )
    assert done.status == "active"
    return done.id


def real_record(names: list[str], seed: int, stderr: dict[int, str]) -> dict[str, Any]:
    """A real game's record (random legal moves) with per-seat stderr on decisions and a
    fault of seat 1 whose stderr tail is hostile."""
    game = Game.new(players=len(names), variant="coloured", seed=seed)
    rng = random.Random(seed)
    while not game.is_over():
        game.apply(rng.choice(game.legal_moves()))
    record = game.record(names).model_dump(mode="json")
    for rnd in record["rounds"]:
        for decision in rnd["decisions"]:
            if decision["seat"] in stderr:
                decision["stderr"] = stderr[decision["seat"]]
    record["faults"] = [
        {
            "seat": 1,
            "kind": "timeout",
            "round": 1,
            "message": f"no reply {XSS}",
            "last_message": XSS,
            "stderr_tail": stderr.get(1, ""),
            "forfeit": False,
        }
    ]
    return record


def play(
    store: CompetitionStore,
    version_ids: list[int],
    names: list[str],
    seed: int,
    *,
    faulted: bool = True,
) -> str:
    """A game scheduled, claimed and finished; ``faulted``: seat 1 timed out once."""
    stderr = {0: f"{ALICE_STDERR} {XSS}", 1: f"{BOB_STDERR} {XSS}"}
    record = real_record(names, seed, stderr)
    game = store.schedule_game(
        kind="ladder",
        players=len(version_ids),
        variant="coloured",
        seed=seed,
        version_ids=version_ids,
        rated=True,
    )
    claimed = store.claim_scheduled_game()
    assert claimed is not None and claimed.id == game.id
    final = {f["seat"]: f for f in record["final"]}
    outcome = GameOutcome(
        end_reason=record["end_reason"],
        rounds=len(record["rounds"]),
        duration_s=0.5,
        worker="test",
        record_json=json.dumps(record).encode(),
        seats=tuple(
            FinishedSeat(seat, final[seat]["total"], final[seat]["rank"], False)
            for seat in range(len(version_ids))
        ),
        faults=(FinishedFault(1, "timeout", 1, f"no reply {XSS}", False),) if faulted else (),
        stderr=tuple(stderr.items()),
    )
    assert store.finish_game(game.id, outcome)
    return game.id


def web_settings(**changes: Any) -> WebSettings:
    """The default competition's web settings, with ``changes``."""
    return dataclasses.replace(WebSettings.of(CompetitionConfig()), **changes)


def make_site(
    tmp_path: Path,
    *,
    settings: WebSettings | None = None,
    hostile: bool = False,
    stale_seconds: float = 0.0,
) -> Site:
    """Organiser ``org``; ``alice`` (bot ``alpha``) and ``bob`` (bot ``beta``); two games.
    ``hostile``: author and bot self-descriptions are script injections. ``stale_seconds``:
    the page cache's (0, the strict cache, by default: a test reads what it just wrote; the
    stale answers are tested on the cache itself, with a driven clock)."""
    store = CompetitionStore.open(sqlite_url(tmp_path / "store.db"))
    tokens: dict[str, str] = {}
    _org, tokens["org"] = store.create_author("org", organiser=True)
    alice_name = f"alice{XSS}" if hostile else "alice"
    alice, tokens["alice"] = store.create_author(alice_name)
    bob, tokens["bob"] = store.create_author("bob")
    lang = XSS if hostile else "python"
    a = activate(store, alice.id, "alpha", language=lang, verdict=f"accepted {XSS}")
    b = activate(store, bob.id, "beta")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    site = Site(store=store, client=None, data_dir=data_dir, tokens=tokens)  # type: ignore[arg-type]
    ctx = ServerContext(
        config=CompetitionConfig(server=ServerSection(stale_seconds=stale_seconds)),
        store=store,
        data_dir=data_dir,
        wake_builder=lambda: site.woken.__setitem__("builder", site.woken["builder"] + 1),
        wake_ladder=lambda: site.woken.__setitem__("ladder", site.woken["ladder"] + 1),
    )
    site.client = TestClient(create_app(ctx, settings), base_url="http://testserver")
    site.games = [play(store, [a, b], ["alpha", "beta"], seed) for seed in (1, 2)]
    if hostile:
        evil = activate(
            store,
            alice.id,
            EVIL_BOT,
            language=XSS,
            verdict=f"ok {XSS}",
            ready_author=XSS,
            ready_version=XSS,
        )
        site.games.append(play(store, [evil, b], [EVIL_BOT, "beta"], 3))
        rejected = store.add_submission(alice.id, "alpha", "/uploads/r.zip", "1" * 64)
        assert store.claim_queued_version() is not None
        store.finish_build(
            rejected.id, False, f"build failed {XSS}", f"log {XSS}\x1b]52;c;x\x07", None, None, {}
        )
    # alice's store record keeps her own token under the hostile name
    site.tokens[alice_name] = tokens["alice"]
    return site


def bot_zip(name: str, extra: dict[str, bytes] | None = None, top: str = "") -> bytes:
    """A bot folder as a .zip (``top``: inside one top-level folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(f"{top}bot.toml", f'name = "{name}"\ncommand = "python3 bot.py"\n')
        zf.writestr(f"{top}bot.py", "print('hi')\n")
        for path, data in (extra or {}).items():
            zf.writestr(top + path, data)
    return buffer.getvalue()


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port, in a thread; its base URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
