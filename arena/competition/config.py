"""``competition.toml``: what a hosted competition is, validated with clear messages.

One file defines the competition: its name and where it keeps its data and store
(``[competition]``), where the web server listens (``[server]``), the ladder's mix of
games (``[ladder]``), how games are played (``[play]``: the arena's ``PlaySettings``),
what an upload may be (``[limits]``: ``UploadLimits``), how often an author may
challenge (``[challenges]``), when submissions close and the finals run (``[phases]``),
what the finals play (``[finals]``) and when scheduled rounds start (``[rounds]``). Every
table is optional: the defaults just work.
"""

from __future__ import annotations

import os
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arena.errors import ArenaError
from arena.play.executors import WORKERS_HELP, worker_count
from arena.referee.settings import PlaySettings
from arena.sandbox import BuildLimits
from arena.sandbox.spec import MIB
from arena.validation import explain_validation

STORE_ENV = "ARENA_SERVER_STORE"
"""Environment variable that overrides ``[competition] store`` (e.g. a PostgreSQL URL
with a password that should not sit in the file)."""
STORE_FILE = "competition.sqlite"
ORGANISER_TOKEN_FILE = "organiser.token"
_K = TypeVar("_K")


class UploadLimits(BaseModel):
    """How big an uploaded bot may be, and what its build may use: the ``[limits]``
    table of ``competition.toml`` (the defaults live here and only here)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    upload_mb: int = Field(
        default=16, ge=1, le=4096, description="Largest archive accepted (MiB); else HTTP 413."
    )
    unpacked_mb: int = Field(
        default=128, ge=1, le=4096, description="Most bytes an archive may unpack to (MiB)."
    )
    max_files: int = Field(
        default=10_000, ge=1, le=1_000_000, description="Most files, folders and links."
    )
    max_ratio: int = Field(
        default=200,
        ge=10,
        description="Largest unpacked/archive size ratio (past 8 MiB unpacked): a zip bomb.",
    )
    build_seconds: float = Field(
        default=300.0, gt=0, le=3600, description="Wall-clock time a build may take (s)."
    )
    memory_mb: int = Field(default=2048, ge=64, description="Memory a build may use (MiB).")
    build_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Builds run at once; never two of one author, so one author's slow "
        "builds leave the other workers to everyone else.",
    )
    build_budget_s: float = Field(
        default=900.0,
        gt=0,
        description="Build time an author may use per hour (s); past it their uploads wait "
        "in the queue (so at most this plus one build_seconds an hour). Authors take turns "
        "in the queue either way.",
    )
    disk_mb: int = Field(
        default=1024,
        ge=1,
        description="Disk an author's kept submissions may use (MiB: archives, unpacked "
        "sources, builds); replaced and rejected versions' files are deleted.",
    )

    @property
    def upload_bytes(self) -> int:
        return self.upload_mb * MIB

    @property
    def disk_bytes(self) -> int:
        return self.disk_mb * MIB

    @property
    def unpacked_bytes(self) -> int:
        return self.unpacked_mb * MIB

    def build_limits(self) -> BuildLimits:
        """The build sandbox's limits for a submission (the build area always holds at
        least the unpacked source)."""
        host = BuildLimits()
        return BuildLimits(
            timeout_s=self.build_seconds,
            area_bytes=max(host.area_bytes, self.unpacked_bytes),
            memory_bytes=self.memory_mb * MIB,
            max_processes=host.max_processes,
            max_entries=max(host.max_entries, self.max_files),
        )


class CompetitionConfigError(ArenaError):
    """An invalid competition.toml; the message names the file and the field."""


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompetitionSection(_Table):
    name: str = Field(default="Azul Arena", min_length=1, max_length=100)
    data_dir: Path | None = Field(
        default=None,
        description="Uploads, builds, logs and the SQLite store; default: "
        "'<file stem>-data' next to competition.toml.",
    )
    store: str = Field(
        default="sqlite",
        description="'sqlite' (a file in data_dir) or a postgresql+psycopg:// URL; "
        f"env {STORE_ENV} overrides.",
    )

    staff_in_prizes: bool = Field(
        default=False,
        description="Whether staff bots (arena token --staff, the roster's staff column) "
        "take prize ranks; by default they are baselines and the prize rank skips them.",
    )

    @field_validator("store")
    @classmethod
    def _store(cls, value: str) -> str:
        if value != "sqlite" and not value.startswith(("postgresql", "sqlite:")):
            raise ValueError("'sqlite' or a postgresql+psycopg://user:password@host/db URL")
        return value


class ServerSection(_Table):
    host: str = Field(
        default="127.0.0.1",
        description="Listen address: loopback unless you put the server on a network on "
        "purpose (then behind a TLS reverse proxy).",
    )
    port: int = Field(default=8000, ge=0, le=65535)
    registration: Literal["tokens", "open"] = Field(
        default="tokens",
        description="tokens: the organiser issues author tokens (arena token); open: anyone "
        "may register a name and get a token.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="A connection whose request line and headers have not all arrived "
        "this long after it opened (or after its previous response) is closed.",
    )
    body_min_kib_s: float = Field(
        default=8.0,
        ge=0,
        description="Slowest request body accepted (KiB/s, averaged since the headers) "
        "once header_timeout_s has passed; slower, the connection is closed (0: no floor).",
    )
    client_connections: int = Field(
        default=16,
        ge=0,
        le=100_000,
        description="Open connections per client address (0: no cap); more are refused. "
        "Behind a reverse proxy every client has the proxy's address: cap there.",
    )
    signin_failures_per_hour: int = Field(
        default=20,
        ge=1,
        le=100_000,
        description="Failed sign-ins (bad tokens) per client address per hour; then HTTP "
        "429 until the hour passes. Each failure is logged.",
    )
    page_process: bool = Field(
        default=True,
        description="Make the public pages in a process of the server's own "
        "(arena/server/pagemaker.py), so that making them never holds up the answers from "
        "memory (a full load's p99 60-66 ms against 87-150 ms: docs/benchmarks.md, entry "
        "51). false: the server makes them (one process less).",
    )
    stale_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="A public page outdated by a write (a game landed) is still answered "
        "from the cache for this long while one request makes it anew; 0: every visitor "
        "after a write waits for the fresh page.",
    )
    session_days: float = Field(
        default=30.0,
        gt=0,
        le=365,
        description="A browser session lasts this long; signing out ends it at once.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="text: one readable line per event; json: one JSON object per line "
        "(time, level, logger, message and the event's fields) for a log collector.",
    )


class LadderSection(_Table):
    players: dict[int, float] = Field(
        default_factory=lambda: {2: 0.5, 4: 0.5},
        description="Share of games per player count (2, 3 or 4).",
    )
    variants: dict[str, float] = Field(
        default_factory=lambda: {"coloured": 0.8, "gray": 0.2},
        description="Share of games per wall.",
    )
    games_in_flight: int = Field(
        default=2,
        ge=1,
        le=256,
        description=(
            "Games running at once (when they fill a local pool, one more per worker waits "
            "queued; ray: at least two batches per CPU)."
        ),
    )
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="local: a process pool here; ray: a Ray cluster (azul-arena[ray]).",
    )
    workers: int = Field(default=0, ge=0, le=256, description=WORKERS_HELP)
    ray_address: str | None = Field(default=None, description="ray: 'auto' or ray://host:port.")
    new_version_games: int = Field(
        default=10,
        ge=0,
        le=10_000,
        description="A new version plays in every game until it has this many.",
    )
    master_seed: int = Field(default=1, ge=0, description="Seeds the ladder's choices and deals.")
    nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="Added to the niceness of arena serve's ladder process, its game workers "
        "and bots (executor local: the games share the server's machine): on a busy machine "
        "the web server answers first (with page_process on: p99 65 against 108 ms at 1,000 "
        "requests/s, docs/benchmarks.md); bots on CPU clocks are charged only their own "
        "CPU. 0: games at the server's priority.",
    )

    @field_validator("players")
    @classmethod
    def _players(cls, value: dict[int, float]) -> dict[int, float]:
        bad = [k for k in value if k not in (2, 3, 4)]
        if bad:
            raise ValueError(f"player counts are 2, 3 or 4, not {bad[0]}")
        return _shares(value)

    @field_validator("variants")
    @classmethod
    def _variants(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k in value if k not in ("coloured", "gray")]
        if bad:
            raise ValueError(f"walls are 'coloured' or 'gray', not {bad[0]!r}")
        return _shares(value)

    @property
    def worker_count(self) -> int:
        return worker_count(self.workers)


def _shares(value: dict[_K, float]) -> dict[_K, float]:
    if not value:
        raise ValueError("give at least one entry")
    if any(v < 0 for v in value.values()) or sum(value.values()) <= 0:
        raise ValueError("shares are non-negative and not all zero")
    total = sum(value.values())
    return {k: v / total for k, v in sorted(value.items()) if v > 0}


class ChallengesSection(_Table):
    per_hour: int = Field(
        default=6, ge=0, le=10_000, description="Unrated challenges per author per hour."
    )


class EventSection(_Table):
    """What a finals or a round plays and how it ranks (``[finals]``, ``[rounds]``)."""

    entrants: str = Field(
        default="all",
        description="all: the latest built version of every bot as of the cutoff; top:K: "
        "the K best of the ladder when the event starts.",
    )
    games_per_bot: int = Field(
        default=20, ge=1, le=100_000, description="sampled: games each entrant plays."
    )
    deals: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="round-robin: deals every set of entrants plays, each under every "
        "balanced seating.",
    )
    players: list[int] = Field(default_factory=lambda: [2], description="Player counts.")
    variants: list[str] = Field(default_factory=lambda: ["coloured"], description="Walls.")
    master_seed: int = Field(default=1, ge=0, description="Seeds the deals and the draw.")
    rank_by: Literal["final", "trueskill", "points"] = Field(
        default="final",
        description="final: the batch fit with rank intervals and the stability audit; "
        "trueskill: TrueSkill over the event's games in order; points: the formula.",
    )
    points: str = Field(
        default="50*wins + 20*ties + points",
        description="The points formula (over wins, ties, losses, points, faults, failed, "
        "games); shown always, ranks with rank_by = 'points'.",
    )

    @field_validator("entrants")
    @classmethod
    def _entrants(cls, value: str) -> str:
        if value == "all":
            return value
        head, _, count = value.partition(":")
        if head != "top" or not count.isdigit() or int(count) < 2:
            raise ValueError("'all' or 'top:K' with K of 2 or more (e.g. 'top:16')")
        return value

    @field_validator("players")
    @classmethod
    def _event_players(cls, value: list[int]) -> list[int]:
        if not value or any(k not in (2, 3, 4) for k in value):
            raise ValueError("player counts are 2, 3 or 4, e.g. [2] or [2, 4]")
        return sorted(set(value))

    @field_validator("variants")
    @classmethod
    def _event_variants(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if v not in ("coloured", "gray")]
        if not value or bad:
            raise ValueError(
                f"walls are 'coloured' or 'gray', not {bad[0]!r}" if bad else "give a wall"
            )
        return list(dict.fromkeys(value))

    @field_validator("points")
    @classmethod
    def _points(cls, value: str) -> str:
        from arena.ratings.points import FormulaError, parse_formula

        try:
            return parse_formula(value).text
        except FormulaError as exc:
            raise ValueError(str(exc)) from None

    @property
    def top(self) -> int | None:
        """K of ``entrants = "top:K"`` (None: every bot)."""
        return None if self.entrants == "all" else int(self.entrants.split(":")[1])


class FinalsSection(EventSection):
    schedule: Literal["round-robin", "sampled"] = Field(
        default="round-robin",
        description="round-robin: every set of entrants on every deal; sampled: "
        "games_per_bot each, in seat-balanced sets on shared deals.",
    )

    @property
    def pairing(self) -> Literal["round-robin", "sampled"]:
        return self.schedule


class RoundsSection(EventSection):
    schedule: str = Field(
        description="When a round starts (UTC): 'daily HH:MM' or a cron line ('0 2 * * *').",
    )
    pairing: Literal["round-robin", "sampled"] = Field(
        default="round-robin", description="Each round's games, as [finals] schedule."
    )

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        from croniter import croniter

        line = cron_line(value)
        if not croniter.is_valid(line):
            raise ValueError(
                f"{value!r} is neither 'daily HH:MM' nor a cron line (e.g. '0 2 * * *')"
            )
        return value

    @property
    def cron(self) -> str:
        return cron_line(self.schedule)


def cron_line(text: str) -> str:
    """``daily 02:00`` as the cron line ``0 2 * * *``; anything else as it is."""
    words = text.split()
    if len(words) == 2 and words[0] == "daily":
        hour, _, minute = words[1].partition(":")
        if hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60:
            return f"{int(minute)} {int(hour)} * * *"
        return "invalid"
    return text.strip()


class PhasesSection(_Table):
    """The competition's calendar: a deadline for uploads, then the finals and the
    results (see :mod:`arena.competition.phases`). No ``[phases]`` table: an open
    ladder for ever."""

    deadline: datetime = Field(
        description="When submissions close: a TOML datetime with a UTC offset or 'Z' "
        "(e.g. 2026-12-20T12:00:00Z); the organiser may extend or reopen it."
    )
    finals: Literal["at-deadline", "manual"] = Field(
        default="at-deadline",
        description="at-deadline: the finals start when submissions close; manual: when "
        "the organiser starts them.",
    )
    publish: Literal["auto", "manual"] = Field(
        default="auto",
        description="auto: results are published when the finals finish; manual: when "
        "the organiser publishes them.",
    )
    ladder: Literal["until-deadline", "always", "off"] = Field(
        default="until-deadline",
        description="until-deadline: the continuous ladder stops at the deadline (the "
        "finals have the machine); always: it keeps going; off: no ladder games.",
    )

    @field_validator("deadline", mode="before")
    @classmethod
    def _a_datetime(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                pass
        if not isinstance(value, datetime):
            raise ValueError("a TOML datetime with a UTC offset, such as 2026-12-20T12:00:00Z")
        return value

    @field_validator("deadline")
    @classmethod
    def _deadline(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                "give the deadline with a UTC offset or 'Z' (e.g. 2026-12-20T12:00:00Z): "
                "a time without one means a different moment on every machine"
            )
        return value.astimezone(UTC)


class CompetitionConfig(_Table):
    """The whole competition.toml (paths resolved; ``source`` is the file)."""

    competition: CompetitionSection = Field(default_factory=CompetitionSection)
    server: ServerSection = Field(default_factory=ServerSection)
    ladder: LadderSection = Field(default_factory=LadderSection)
    play: PlaySettings = Field(default_factory=PlaySettings)
    limits: UploadLimits = Field(default_factory=UploadLimits)
    challenges: ChallengesSection = Field(default_factory=ChallengesSection)
    finals: FinalsSection = Field(default_factory=FinalsSection)
    rounds: RoundsSection | None = None
    """No ``[rounds]`` table: no scheduled rounds."""
    phases: PhasesSection | None = None
    source: Path = Field(default=Path("competition.toml"), exclude=True)

    @property
    def data_dir(self) -> Path:
        if self.competition.data_dir is not None:
            return self.competition.data_dir
        return self.source.resolve().parent / f"{self.source.stem}-data"

    @property
    def store_url(self) -> str:
        """The store's database URL (the environment overrides the file)."""
        store = os.environ.get(STORE_ENV) or self.competition.store
        if store == "sqlite":
            return f"sqlite:///{self.data_dir / STORE_FILE}"
        return store

    @property
    def organiser_token_file(self) -> Path:
        return self.data_dir / ORGANISER_TOKEN_FILE


def load_competition(path: Path) -> CompetitionConfig:
    """Read and validate ``path``; :class:`CompetitionConfigError` says what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompetitionConfigError(
            f"{path}: no such file", hint="write one: see docs/hosting.md"
        ) from None
    except IsADirectoryError:
        raise CompetitionConfigError(f"{path}: is a folder, not a competition.toml") from None
    except OSError as exc:
        raise CompetitionConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CompetitionConfigError(f"{path}: not valid TOML ({exc})") from None
    section = data.get("competition")
    if isinstance(section, dict) and isinstance(section.get("data_dir"), str):
        section["data_dir"] = (path.resolve().parent / section["data_dir"]).resolve()
    data["source"] = path.resolve()
    try:
        return CompetitionConfig.model_validate(data)
    except ValidationError as exc:
        message = explain_validation(exc, str(path), CompetitionConfig, whole="file")
        raise CompetitionConfigError(message) from None
