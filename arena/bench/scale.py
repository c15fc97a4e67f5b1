"""``arena bench scale``: a thousand bots through the harness, in bounded memory.

Two parts, each in a child process of its own (so each has its own peak memory):

* ``sampled``: the ``Sampled`` tournament scheduler over the whole field, each game's
  result scripted (random ranks) and fed back in schedule order, the ratings it chooses
  with being the real ones; the bot seats of every game go through a worker's real
  persistent-bot LRU (``WorkerState``; bot processes start lazily, so none is spawned)
  for two simulated workers, and the most seats a worker held is reported against its
  bound.
* ``ladder``: the real ``Ladder`` over a SQLite ``CompetitionStore`` holding the field's
  versions (filled through the store's own API), its games played by a scripted
  executor (the play layer's ``InlineExecutor`` with scripted results: no bot process),
  so the store, the choice of games and the rating are what is measured. When every
  version has its games, a new version is submitted: how many games start before its
  first, and how long that took.

Both stop once every bot has ``games_per_bot`` games. Each part runs at the asked field
size and, as the baseline of the same run, at a tenth of it: games/s are reported as
the ratio of the two (flat cost per game: near 1).
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from arena.commands.output import console

LRU_BOUND = 8
"""The persistent bot processes a worker keeps (``MAX_LIVE_BOTS``)."""


def _rss_mb() -> float:
    """This process's resident memory now (MB)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _spread(counts: list[int]) -> dict[str, Any]:
    low, high = min(counts), max(counts)
    return {"min": low, "max": high, "max_over_min": round(high / max(low, 1), 3)}


# ---------------------------------------------------------------- sampled


def sampled_part(bots: int, per_bot: int, seed: int = 1) -> dict[str, Any]:
    from arena.play.job import GameJob
    from arena.play.worker import WorkerState, _key
    from arena.referee.manifest import BotManifest, BotSpec, Built
    from arena.referee.settings import PlaySettings
    from arena.tournament.schedule import Entrant, Finished, Sampled

    rng = random.Random(seed)
    start_mb = _rss_mb()
    names = [f"bot{i:04d}" for i in range(bots)]
    scheduler = Sampled(
        [Entrant(n, "v1") for n in names], [2, 4], ["coloured", "gray"], 10**9, seed, "rotations"
    )
    folder = Path(tempfile.gettempdir())
    built = {
        n: Built(
            BotSpec(folder=folder / n, manifest=BotManifest(name=n, command="true")),
            0,
            False,
            "v1",
            folder,
        )
        for n in names
    }
    field_mb = _rss_mb()
    workers = [WorkerState(worker_id=w, max_live_bots=LRU_BOUND) for w in range(2)]
    settings = PlaySettings()
    most_live = 0
    played = dict.fromkeys(names, 0)
    games = 0
    started = time.perf_counter()
    while min(played.values()) < per_bot:
        batch = scheduler.next()
        assert batch, "the sampled scheduler stopped handing out games"
        for game in batch:
            state = workers[game.game_index % len(workers)]
            job = GameJob(game, tuple(built[b] for b in game.bots), settings, True, folder)
            keep = {_key(b) for b in job.bots}
            for seat in range(game.n_players):
                state.seat_for(job, seat, keep)
            most_live = max(most_live, len(state.seats))
            ranks = list(range(1, game.n_players + 1))
            rng.shuffle(ranks)
            scheduler.finished(Finished(game.game_index, game.bots, tuple(ranks)))
            for b in game.bots:
                played[b] += 1
            games += 1
    seconds = time.perf_counter() - started
    end_mb = _rss_mb()
    for state in workers:
        state.close()
    return {
        "bots": bots,
        "games": games,
        "seconds": round(seconds, 2),
        "games_per_s": round(games / seconds, 1),
        "games_per_bot": _spread(list(played.values())),
        "peak_mb": round(_peak_mb(), 1),
        "kb_per_bot": round((field_mb - start_mb) * 1000 / bots, 2),
        "kb_per_game": round(max(0.0, end_mb - field_mb) * 1000 / games, 3),
        "lru_bound": LRU_BOUND,
        "lru_most_live": most_live,
    }


# ---------------------------------------------------------------- ladder


def _add_versions(store: Any, names: list[str], folder: Path, author_id: int) -> list[int]:
    ids = []
    for name in names:
        store.add_submission(author_id, name, "/dev/null", "0" * 64)
        version = store.claim_queued_version()
        assert version is not None
        built = folder / name
        built.mkdir(parents=True, exist_ok=True)
        manifest = {"name": name, "command": "true"}
        done = store.finish_build(
            version.id, True, "ok", "", str(built), "v1", {"manifest": manifest}
        )
        ids.append(done.id)
    return ids


def _scripted(rng: random.Random) -> Any:
    """A game's result with random ranks, as the worker would report it."""
    from arena.play.job import GameJob, GameResult, SeatRow

    def play(job: GameJob) -> GameResult:
        game = job.game
        ranks = list(range(1, game.n_players + 1))
        rng.shuffle(ranks)
        seats = tuple(
            SeatRow(i, name, 40 - r, 0, 0, 0, 0, r, 0, False, None, 10, 1.0, 2.0, 3.0)
            for i, (name, r) in enumerate(zip(game.bots, ranks, strict=True))
        )
        record = json.dumps({"game_id": game.game_id, "seed": game.deal_seed}).encode()
        return GameResult(game.game_index, 0.01, "normal", 5, "scripted", record, seats, ())

    return play


def ladder_part(bots: int, per_bot: int, seed: int = 1) -> dict[str, Any]:
    from arena.competition.config import LadderSection
    from arena.competition.ladder import Ladder
    from arena.play.executors import InlineExecutor
    from arena.referee.settings import PlaySettings
    from arena.store.competition import CompetitionStore

    with tempfile.TemporaryDirectory(prefix="arena-bench-scale-") as tmp:
        root = Path(tmp)
        store = CompetitionStore.open(f"sqlite:///{root / 'competition.sqlite'}")
        start_mb = _rss_mb()
        author, _ = store.create_author("bench")
        filled_at = time.perf_counter()
        _add_versions(store, [f"bot{i:04d}" for i in range(bots)], root / "bots", author.id)
        fill_s = time.perf_counter() - filled_at
        field_mb = _rss_mb()
        config = LadderSection(master_seed=seed, new_version_games=10)
        ladder = Ladder(
            store,
            config,
            PlaySettings(),
            root / "data",
            InlineExecutor(play=_scripted(random.Random(seed))),
        )
        thread = threading.Thread(target=ladder.run, name="ladder", daemon=True)
        started = time.perf_counter()
        thread.start()

        def loads() -> list[int]:
            per = store.ladder_load()
            return [sum(per.get(v.id, {}).values()) for v in store.active_versions()]

        while min(loads()) < per_bot:
            time.sleep(0.5)
        seconds = time.perf_counter() - started
        games = store.games_finished()
        end_mb = _rss_mb()
        spread = _spread(loads())
        # A newcomer in a full field: games the ladder started after it was accepted and
        # before its first one. The ladder is stopped (its games finished) while it
        # arrives and started again, so no game started meanwhile is counted as started
        # after it, however late this thread runs.
        ladder.shutdown(abort=False)
        thread.join(30)
        known = {g.id for g in store.games(limit=100)}
        asked = time.perf_counter()
        (newcomer,) = _add_versions(store, ["newcomer"], root / "bots", author.id)
        ladder = Ladder(
            store,
            config,
            PlaySettings(),
            root / "data",
            InlineExecutor(play=_scripted(random.Random(seed + 1))),
        )
        thread = threading.Thread(target=ladder.run, name="ladder", daemon=True)
        thread.start()
        while store.ladder_load().get(newcomer) is None:
            time.sleep(0.01)
        wait_s = time.perf_counter() - asked
        since = [g for g in reversed(store.games(limit=100)) if g.id not in known]
        ahead = next(i for i, g in enumerate(since) if "newcomer" in {s.bot_name for s in g.seats})
        ladder.shutdown(abort=False)
        thread.join(30)
        store.close()
    return {
        "bots": bots,
        "games": games,
        "seconds": round(seconds, 2),
        "games_per_s": round(games / seconds, 1),
        "games_per_bot": spread,
        "peak_mb": round(_peak_mb(), 1),
        "fill_s": round(fill_s, 2),
        "kb_per_bot": round(max(0.0, field_mb - start_mb) * 1000 / bots, 2),
        "kb_per_game": round(max(0.0, end_mb - field_mb) * 1000 / games, 3),
        "new_version_games_started_before_its_first": ahead,
        "new_version_wait_s": round(wait_s, 3),
        "games_in_flight": config.games_in_flight,
    }


PARTS = {"sampled": sampled_part, "ladder": ladder_part}


# ---------------------------------------------------------------- the command


def _child(part: str, bots: int, per_bot: int) -> dict[str, Any]:
    """Run one part in a fresh process (its own peak memory)."""
    done = subprocess.run(
        [sys.executable, "-m", "arena.bench.scale", part, str(bots), str(per_bot)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the {part} part failed: {tail}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run(bots: int, per_bot: int, as_json: bool) -> int:
    baseline_bots = max(10, bots // 10)
    out: dict[str, Any] = {"bots": bots, "games_per_bot": per_bot, "parent_peak_mb": 0.0}
    for part in PARTS:
        measured = _child(part, bots, per_bot)
        baseline = _child(part, baseline_bots, per_bot)
        measured["speed_vs_baseline"] = round(measured["games_per_s"] / baseline["games_per_s"], 2)
        out[part] = measured
        out[f"{part}_baseline"] = baseline
    out["parent_peak_mb"] = round(_peak_mb(), 1)
    out["load"] = [round(x, 2) for x in os.getloadavg()]
    if as_json:
        print(json.dumps(out, indent=2))
        return 0
    con = console
    con.print(f"[bold]{bots} bots, {per_bot} games each[/] (baseline: {baseline_bots} bots)")
    for part in PARTS:
        m = out[part]
        spread = m["games_per_bot"]
        con.print(
            f"{part}: {m['games']} games, {m['games_per_s']} games/s "
            f"({m['speed_vs_baseline']}x the {baseline_bots}-bot baseline), "
            f"peak {m['peak_mb']} MB, {m['kb_per_bot']} kB/bot, {m['kb_per_game']} kB/game, "
            f"games per bot {spread['min']}-{spread['max']} (max/min {spread['max_over_min']})"
        )
    s = out["sampled"]
    con.print(
        f"sampled: persistent bots per worker at most {s['lru_most_live']} (bound {s['lru_bound']})"
    )
    lad = out["ladder"]
    ahead = lad["new_version_games_started_before_its_first"]
    con.print(
        f"ladder: a new version's first game after {ahead} other games started "
        f"({lad['new_version_wait_s']} s)"
    )
    con.print(f"parent peak {out['parent_peak_mb']} MB; load {out['load']}")
    return 0


if __name__ == "__main__":
    _part, _bots, _per_bot = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(PARTS[_part](_bots, _per_bot)))
