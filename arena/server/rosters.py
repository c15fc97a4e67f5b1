"""``arena roster``: a course's teams and their members, imported from a CSV file the
organiser keeps, with one token per new member (written once, to a 0600 file or stdout).

Rules live in :mod:`arena.store.roster` (what a good line is) and the store (one
transaction); this module reads the file, opens the store and writes the tokens.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import tempfile
from pathlib import Path
from typing import TextIO

from arena.competition.config import load_competition
from arena.errors import ArenaError
from arena.server.service import open_store
from arena.store.competition_models import Member
from arena.store.roster import parse_roster
from arena.textsafe import visible

TOKEN_COLUMNS = ("team", "member", "email", "token")


class RosterError(ArenaError):
    """The roster or the tokens file cannot be used."""


def _read_roster(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise RosterError(f"no roster file {path}") from None
    except UnicodeDecodeError:
        raise RosterError(f"{path} is not UTF-8 text (save the CSV as UTF-8)") from None
    except OSError as exc:
        raise RosterError(f"cannot read {path}: {exc.strerror}") from None


def _tokens_csv(issued: list[tuple[Member, str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TOKEN_COLUMNS)
    for member, token in issued:
        writer.writerow((member.team, member.name, member.email or "", token))
    return out.getvalue()


class _TokensFile:
    """The tokens file, made before the import (so a folder we cannot write fails before
    any token is issued) as a 0600 temporary file beside the target, moved into place
    at the end: never half-written, and never over an existing file without ``force``."""

    def __init__(self, target: Path, force: bool) -> None:
        self.target = target
        self.force = force
        if target.exists() and not force:
            raise RosterError(
                f"{target} exists: it may hold tokens not handed out yet",
                hint="pass --force to overwrite it, or name another file",
            )
        try:
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        except OSError as exc:
            raise RosterError(f"cannot write beside {target}: {exc.strerror}") from None
        self.temp = Path(name)
        self.handle = os.fdopen(fd, "w", encoding="utf-8", newline="")

    def commit(self, text: str) -> None:
        with self.handle:
            self.handle.write(text)
            self.handle.flush()
            os.fsync(self.handle.fileno())
        if self.force:
            os.replace(self.temp, self.target)
        else:
            try:
                os.link(self.temp, self.target)  # fails if the file appeared meanwhile
            finally:
                self.temp.unlink(missing_ok=True)

    def abandon(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()
        self.temp.unlink(missing_ok=True)


def import_command(
    toml: Path,
    roster: Path,
    tokens_out: Path | None,
    force: bool,
    staff: bool,
    out: TextIO,
) -> int:
    """``arena roster import``: teams and members from ``roster``; the new members'
    tokens to ``tokens_out`` (or ``out``)."""
    entries = parse_roster(_read_roster(roster), staff=staff)
    config = load_competition(toml)
    tokens_file = _TokensFile(tokens_out, force) if tokens_out is not None else None
    try:
        store = open_store(config)
        try:
            teams_before = {a.name for a in store.authors()}
            issued = store.import_roster(entries)
            teams_after = {a.name for a in store.authors()}
        finally:
            store.close()
    except BaseException:
        if tokens_file is not None:
            tokens_file.abandon()
        raise
    new_teams = len(teams_after - teams_before)
    summary = (
        f"{len(entries)} roster lines: {new_teams} new team{'s' * (new_teams != 1)}, "
        f"{len(issued)} new member{'s' * (len(issued) != 1)}"
    )
    if tokens_file is not None:
        try:
            tokens_file.commit(_tokens_csv(issued))
        except OSError as exc:
            raise RosterError(
                f"imported, but the tokens could not be written to {tokens_out}: {exc.strerror}",
                hint="arena token COMPETITION.toml TEAM --member NAME --renew issues new ones",
            ) from None
        out.write(f"{summary}; their tokens are in {tokens_out} (mode 0600)\n")
    elif issued:
        out.write(f"{summary}; their tokens (shown once; hand each out privately):\n")
        out.write(_tokens_csv(issued))
    else:
        out.write(f"{summary}: nothing to do\n")
    return 0


def list_command(toml: Path, out: TextIO) -> int:
    """``arena roster list``: every team (staff marked) with its members."""
    store = open_store(load_competition(toml))
    try:
        teams = [a for a in store.authors() if not a.organiser]
        members = store.members()
    finally:
        store.close()
    by_team: dict[int, list[Member]] = {}
    for member in members:
        by_team.setdefault(member.author_id, []).append(member)
    if not teams:
        out.write("no teams yet: arena roster import COMPETITION.toml teams.csv\n")
    for team in teams:
        badge = " [staff]" if team.staff else ""
        names = by_team.get(team.id, [])
        out.write(f"{visible(team.name)}{badge}: {len(names)} member{'s' * (len(names) != 1)}\n")
        for m in names:
            email = f" <{visible(m.email)}>" if m.email else ""
            out.write(f"  {visible(m.name)}{email}\n")
    return 0


def add_member_command(toml: Path, team: str, name: str, email: str | None, out: TextIO) -> int:
    store = open_store(load_competition(toml))
    try:
        member, token = store.add_member(team, name, email)
    finally:
        store.close()
    out.write(
        f"token for {visible(member.name)} (team {visible(member.team)}) "
        f"(shown once; give it to them privately):\n{token}\n"
    )
    return 0


def remove_member_command(toml: Path, team: str, name: str, out: TextIO) -> int:
    store = open_store(load_competition(toml))
    try:
        member = store.remove_member(team, name)
    finally:
        store.close()
    out.write(
        f"removed {visible(member.name)} from team {visible(member.team)}: "
        "their token and sessions no longer work\n"
    )
    return 0
