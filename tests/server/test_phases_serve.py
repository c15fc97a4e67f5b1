"""The deadline as an author and an organiser meet it: a real ``arena serve`` on a
loopback port whose deadline has passed refuses ``arena submit`` with the reason; the
organiser reopens through the API; the upload is accepted, and the new deadline (and
the log naming who reopened) survive a restart."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
httpx = pytest.importorskip("httpx", reason="the server extra is not installed")

from arena.bench.serve import LiveServer, arena_command, competition_toml, free_port  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    port = free_port()
    data_dir = tmp_path / "data"
    toml = tmp_path / "competition.toml"
    toml.write_text(
        competition_toml(data_dir, port, name="phases")
        + '\n[phases]\ndeadline = 2020-01-01T12:00:00Z\nfinals = "manual"\n'
    )
    live = LiveServer(toml, port, data_dir, tmp_path / "serve.log")
    try:
        live.start()
        yield live
    finally:
        live.close()


def arena_submit(server: LiveServer, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *arena_command(),
            "submit",
            str(REPO / "bots" / "python-random"),
            "--server",
            server.url,
            "--token",
            token,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_arena_submit_is_refused_after_the_deadline_until_the_organiser_reopens(
    server: LiveServer,
) -> None:
    alice = server.issue_token("alice")
    organiser = {"Authorization": f"Bearer {server.organiser_token()}"}
    refused = arena_submit(server, alice)
    assert refused.returncode != 0
    assert "submissions closed at 2020-01-01 12:00 UTC" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr + refused.stdout

    by_alice = httpx.post(
        server.url + "/api/admin/phase/reopen",
        headers={"Authorization": f"Bearer {alice}"},
        json={"deadline": "2099-01-01T00:00:00Z"},
    )
    assert by_alice.status_code == 403
    new_deadline = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    reopened = httpx.post(
        server.url + "/api/admin/phase/reopen",
        headers=organiser,
        json={"deadline": new_deadline.isoformat()},
    )
    assert reopened.status_code == 200, reopened.text
    accepted = arena_submit(server, alice)
    assert accepted.returncode == 0, accepted.stderr
    assert "submitted python-random version 1" in accepted.stdout

    assert server.terminate() == 0
    server.start()
    phase = httpx.get(server.url + "/api/phase", headers=organiser).json()
    assert phase["phase"] == "open" and phase["uploads_open"]
    assert phase["deadline"] == new_deadline.isoformat()
    assert [(r["action"], r["actor"]) for r in phase["log"]] == [
        ("reopen", "organiser"),
        ("deadline", "schedule"),
    ]
