"""TrueSkill ratings kept up to date as games finish: stored, resumed, never recomputed.

``IncrementalRatings`` holds every bot's (mu, sigma), how many games it has applied, the
highest schedule position applied and an order-free fingerprint of exactly those games
(``GameTable.fingerprint``), plus the rating-history checkpoints a report draws. Its
state is plain JSON (``to_json``/``from_json``): the store keeps it, and the next report
or the next finished game continues from it.

Games are rated strictly in schedule order. Workers finish games out of order, so
``sync(finished, through=...)`` advances the state only over the games up to ``through``
(the caller's "every scheduled game up to here has finished"); ``rated(finished)`` gives
the ratings of *all* finished games from a copy, without storing the tail. If the stored
games are no longer exactly the finished games up to the stored position (a store
rebuilt, a game re-played), ``sync`` starts again from the prior: the result always
equals a from-scratch rating of the same games, bit for bit (the tests check it).

Per game this costs one ``kernel.update_one`` (~20 us for 2 players, ~130 us for 4).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arena.ratings.games import GameTable, RatedGame, fingerprint_add
from arena.ratings.kernel import update_one
from arena.ratings.model import DEFAULT_PARAMS, TrueSkillParams

STATE_FORMAT = "azul-arena/ratings-state"
STATE_VERSION = 1
HISTORY_POINTS = 400
"""Checkpoints kept for the rating history: every game up to this many games, then
every 2nd, 4th, ... game (between half and all of this many rows), plus the latest."""


def _compiled_available() -> bool:
    from arena.ratings import compiled

    return compiled.AVAILABLE


class StateError(ValueError):
    """A stored ratings state that cannot be used (the caller recomputes)."""


class IncrementalRatings:
    """Every bot's TrueSkill rating after the games applied so far, in schedule order."""

    def __init__(self, params: TrueSkillParams = DEFAULT_PARAMS) -> None:
        self.params = params
        self._env = params.kernel_env()
        self.compiled = True
        """Rate with the compiled kernel (numba) when it is installed. A caller that rates
        a few games at a time (a tournament's parent process) sets False: the Python
        kernel agrees to ~1e-12 and spares the process numba's import (~1.7 s, ~140 MB)."""
        self.reset()

    def reset(self) -> None:
        """Back to the prior, no games applied."""
        self.mu: dict[str, float] = {}
        self.sigma: dict[str, float] = {}
        self.applied = 0
        self.last_index = -1
        self.fingerprint = ""
        # History checkpoints: (games applied, schedule index, {bot: mu - 3 sigma}).
        self.stride = 1
        self.history: list[tuple[int, int, dict[str, float]]] = []

    # ---------------------------------------------------------------- rating

    def rating(self, bot: str) -> tuple[float, float]:
        """(mu, sigma) of ``bot`` (the prior for a bot not seen yet)."""
        return self.mu.get(bot, self.params.mu), self.sigma.get(bot, self.params.sigma)

    def apply(self, games: GameTable | Sequence[RatedGame]) -> None:
        """Rate ``games`` (all after ``last_index``) in schedule order."""
        table = games if isinstance(games, GameTable) else GameTable.from_games(games)
        if len(table) == 0:
            return
        if int(table.index[0]) <= self.last_index:
            raise ValueError(
                f"game {int(table.index[0])} is not after the last rated game {self.last_index}"
            )
        if self.compiled and _compiled_available():
            self._apply_compiled(table)
        else:
            self._apply_python(table)
        self.last_index = int(table.index[-1])
        self.fingerprint = fingerprint_add(self.fingerprint, table)

    def _apply_python(self, table: GameTable) -> None:
        names = table.names
        prior_mu, prior_sigma = self.params.mu, self.params.sigma
        mu, sigma = self.mu, self.sigma
        rows = zip(table.bots.tolist(), table.sizes.tolist(), table.ties.tolist(), strict=True)
        for (row, size, ties), index in zip(rows, table.index.tolist(), strict=True):
            seated = [names[b] for b in row[:size]]
            new_mu, new_sigma = update_one(
                [mu.get(b, prior_mu) for b in seated],
                [sigma.get(b, prior_sigma) for b in seated],
                ties[: size - 1],
                self._env,
            )
            for bot, m, s in zip(seated, new_mu, new_sigma, strict=True):
                mu[bot] = m
                sigma[bot] = s
            self.applied += 1
            if self.applied % self.stride == 0:
                self._checkpoint(index)

    def _apply_compiled(self, table: GameTable) -> None:
        """Runs of games between history checkpoints in one compiled call each."""
        from arena.ratings import compiled

        names = table.names
        mu = np.array([[self.rating(n)[0] for n in names]])
        sigma = np.array([[self.rating(n)[1] for n in names]])
        cols = np.maximum(table.bots, 0).astype(np.int64)
        ties = np.ascontiguousarray(table.ties)
        positions = np.arange(len(table), dtype=np.int64)[None, :]
        env = self._env
        start = 0
        while start < len(table):
            end = min(len(table), start + self.stride - self.applied % self.stride)
            compiled.rate_rows_serial(
                cols,
                ties,
                table.sizes,
                np.ascontiguousarray(positions[:, start:end]),
                mu,
                sigma,
                env.tau,
                env.beta2,
                env.margin,
            )
            self.applied += end - start
            seen = np.unique(table.bots[start:end])
            for b in seen[seen >= 0].tolist():
                self.mu[names[b]] = float(mu[0, b])
                self.sigma[names[b]] = float(sigma[0, b])
            if self.applied % self.stride == 0:
                self._checkpoint(int(table.index[end - 1]))
            start = end

    def _checkpoint(self, index: int) -> None:
        self.history.append((self.applied, index, self.conservative()))
        if len(self.history) > HISTORY_POINTS:
            self.stride *= 2
            self.history = [h for h in self.history if h[0] % self.stride == 0]

    def conservative(self) -> dict[str, float]:
        """mu - 3 sigma of every bot seen so far."""
        return {bot: self.mu[bot] - 3.0 * self.sigma[bot] for bot in self.mu}

    def sync(self, finished: GameTable, through: int | None = None) -> bool:
        """Make the state cover exactly the ``finished`` games up to schedule position
        ``through`` (default: all; ``finished_frontier`` computes the safe value, -1 for
        none). Returns True when it resumed from the stored state, False when it had to
        start again from the prior."""
        upto = finished if through is None else finished.take(finished.index <= through)
        done = upto.take(upto.index <= self.last_index)
        resumed = len(done) == self.applied and done.fingerprint() == self.fingerprint
        if not resumed:
            self.reset()
        self.apply(upto.take(upto.index > self.last_index))
        return resumed

    def rated(self, finished: GameTable) -> IncrementalRatings:
        """A copy brought to every ``finished`` game (this state is left as it is)."""
        copy = IncrementalRatings.from_json(self.to_json())
        copy.sync(finished)
        return copy

    # ---------------------------------------------------------------- storage

    def to_json(self) -> str:
        """The whole state as JSON text (floats round-trip exactly)."""
        return json.dumps(
            {
                "format": STATE_FORMAT,
                "version": STATE_VERSION,
                "params": asdict(self.params),
                "applied": self.applied,
                "last_index": self.last_index,
                "fingerprint": self.fingerprint,
                "bots": {bot: [self.mu[bot], self.sigma[bot]] for bot in sorted(self.mu)},
                "stride": self.stride,
                "history": [[n, i, r] for n, i, r in self.history],
            },
            separators=(",", ":"),
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> IncrementalRatings:
        """A stored state; ``StateError`` if it is not one this arena wrote."""
        try:
            data: Any = json.loads(text)
            if data.get("format") != STATE_FORMAT or data.get("version") != STATE_VERSION:
                raise StateError("not a ratings state of this version")
            out = cls(TrueSkillParams(**data["params"]))
            for bot, (m, s) in data["bots"].items():
                if not (math.isfinite(m) and math.isfinite(s) and s > 0):
                    raise StateError(f"bad rating for {bot!r}")
                out.mu[str(bot)] = float(m)
                out.sigma[str(bot)] = float(s)
            out.applied = int(data["applied"])
            out.last_index = int(data["last_index"])
            out.fingerprint = str(data["fingerprint"])
            out.stride = int(data["stride"])
            out.history = [
                (int(n), int(i), {str(b): float(r) for b, r in after.items()})
                for n, i, after in data["history"]
            ]
        except StateError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StateError(f"damaged ratings state ({exc})") from None
        return out

    def history_rows(self) -> list[tuple[int, int, dict[str, float]]]:
        """The checkpoints, ending with the current state (for the history table)."""
        rows = list(self.history)
        if self.applied and (not rows or rows[-1][0] != self.applied):
            rows.append((self.applied, self.last_index, self.conservative()))
        return rows


def load_state(path: Path, params: TrueSkillParams = DEFAULT_PARAMS) -> IncrementalRatings:
    """The state stored at ``path``, or a fresh one (missing, unreadable, damaged, or of
    other parameters: the state is a cache of a deterministic function, so starting
    again only costs time)."""
    try:
        state = IncrementalRatings.from_json(Path(path).read_bytes())
    except (OSError, StateError):
        return IncrementalRatings(params)
    return state if state.params == params else IncrementalRatings(params)


def save_state(path: Path, state: IncrementalRatings) -> bool:
    """Write ``state`` to ``path`` atomically; False (and nothing half-written) if the
    folder is read-only or the disk full."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8"
        ) as f:
            tmp = Path(f.name)
            try:
                f.write(state.to_json())
            except OSError:
                tmp.unlink(missing_ok=True)
                raise
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def finished_frontier(scheduled: npt.ArrayLike, finished: npt.ArrayLike) -> int | None:
    """The highest schedule position up to which every scheduled game has finished (None
    if the first is still to play): how far stored ratings can safely advance."""
    sched = np.unique(np.asarray(scheduled, dtype=np.int64))
    done = np.isin(sched, np.asarray(finished, dtype=np.int64))
    if done.all():
        return int(sched[-1]) if len(sched) else None
    first_open = int(np.argmin(done))
    return int(sched[first_open - 1]) if first_open > 0 else None
