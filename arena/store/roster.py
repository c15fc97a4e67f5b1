"""A course's roster: which members make up which team, read from a CSV file the
organiser keeps (``team,member,email`` and an optional ``staff`` column) and checked
line by line against itself and against the store before anything is written.

A team is an author (it owns the bots, pages and logs); each member gets a token that
signs in as the team. Importing the same file again is a no-op: existing teams and
members are left as they are and no token is issued twice.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from arena.store.competition_names import confusable_with, mixes_scripts, skeleton
from arena.store.engine import StoreError

REQUIRED_COLUMNS = ("team", "member", "email")
STAFF_COLUMN = "staff"
YES = frozenset({"yes", "true", "1", "y"})
NO = frozenset({"no", "false", "0", "n", ""})
NAME_CHARS = 64
EMAIL_CHARS = 254


class RosterRejected(StoreError):
    """The roster has bad lines: every one of them, each with its line number; nothing
    was written."""

    def __init__(self, problems: Sequence[str]) -> None:
        shown = list(problems[:20])
        more = len(problems) - len(shown)
        lines = "\n  ".join(shown + ([f"... and {more} more"] if more else []))
        plural = "" if len(problems) == 1 else "s"
        text = f"the roster has {len(problems)} bad line{plural} (nothing imported):\n  {lines}"
        super().__init__(text)
        self.problems = list(problems)


@dataclass(frozen=True)
class RosterEntry:
    """One member line of the roster (``line``: its number in the file, header = 1)."""

    line: int
    team: str
    member: str
    email: str | None = None
    staff: bool | None = None
    """None: the file does not say (the team keeps what it has)."""
    problem: str | None = None
    """Why the line is bad as written (reported with the others by :func:`plan_roster`)."""


@dataclass(frozen=True)
class KnownTeam:
    """What the store holds of a team when the roster is checked."""

    id: int
    name: str
    organiser: bool
    staff: bool
    members: dict[str, str | None] = field(default_factory=dict)
    """Member name -> email."""


@dataclass
class RosterPlan:
    """What importing the roster will write."""

    new_teams: dict[str, bool] = field(default_factory=dict)
    """Team name -> staff."""
    staff_changes: dict[str, bool] = field(default_factory=dict)
    """Existing team -> its new staff flag."""
    new_members: list[RosterEntry] = field(default_factory=list)
    unchanged: int = 0
    """Lines whose member is already on the team."""


def check_name(name: str, what: str) -> str | None:
    """Why ``name`` cannot be a team or member name, or None."""
    if not name:
        return f"empty {what}"
    if len(name) > NAME_CHARS or not name.isprintable():
        return f"the {what} {name!r} is not 1 to {NAME_CHARS} printable characters"
    if mixes_scripts(name):
        return f"the {what} {name!r} mixes scripts (Latin with Cyrillic, ...)"
    return None


def member_entry(
    line: int, team: str, member: str, email: str | None, staff: bool | None = None
) -> RosterEntry:
    """One member line, with its ``problem`` if the names or the email are unusable."""
    team, member, email = team.strip(), member.strip(), (email or "").strip() or None
    bad = check_name(team, "team") or check_name(member, "member")
    if (
        bad is None
        and email is not None
        and (
            len(email) > EMAIL_CHARS
            or "@" not in email
            or not email.isprintable()
            or any(ch.isspace() for ch in email)
        )
    ):
        bad = f"{email!r} is not an email address"
    return RosterEntry(line, team, member, email, staff, bad)


def parse_roster(text: str, *, staff: bool = False) -> list[RosterEntry]:
    """The member lines of a roster CSV (``staff``: every team in it is a staff team);
    a malformed line carries its ``problem``. A bad header raises
    :class:`RosterRejected`."""
    rows = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = next(rows, None)
    columns = [c.strip().casefold() for c in header] if header else []
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in (*REQUIRED_COLUMNS, STAFF_COLUMN)]
    if missing or unknown or len(set(columns)) != len(columns):
        raise RosterRejected(
            [
                "line 1: the header must be 'team,member,email' (and optionally ',staff'); "
                f"found {','.join(columns) or 'nothing'!r}"
            ]
        )
    at = {c: columns.index(c) for c in columns}
    entries: list[RosterEntry] = []
    for number, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue  # blank lines are allowed
        if len(row) != len(columns):
            bad_line = f"{len(row)} fields, the header has {len(columns)}"
            entries.append(RosterEntry(number, "", "", problem=bad_line))
            continue
        cells = {c: row[i].strip() for c, i in at.items()}
        said = cells.get(STAFF_COLUMN)
        is_staff: bool | None = True if staff else None
        if said is not None:
            if said.casefold() not in YES | NO:
                bad_staff = f"staff is {said!r}: use yes or no"
                entries.append(RosterEntry(number, "", "", problem=bad_staff))
                continue
            is_staff = staff or said.casefold() in YES
        entry = member_entry(number, cells["team"], cells["member"], cells["email"], is_staff)
        entries.append(entry)
    return entries


def plan_roster(entries: Iterable[RosterEntry], known: Sequence[KnownTeam]) -> RosterPlan:
    """Check the roster against itself and the store; what importing it writes. Raises
    :class:`RosterRejected` with every problem (look-alike team names, a member twice in
    a team, an email in two teams, a member whose email differs from the stored one, a
    team whose lines disagree about staff, the organiser used as a team)."""
    by_name = {t.name: t for t in known}
    existing_names = list(by_name)
    email_team: dict[str, str] = {}
    for holder in known:
        for email in holder.members.values():
            if email:
                email_team.setdefault(email.casefold(), holder.name)
    plan = RosterPlan()
    problems: list[str] = []
    file_teams: dict[str, str] = {}  # skeleton -> the spelling first seen in the file
    team_staff: dict[str, tuple[bool, int]] = {}
    seen_members: dict[tuple[str, str], int] = {}
    for e in entries:
        where = f"line {e.line}"
        if e.problem is not None:
            problems.append(f"{where}: {e.problem}")
            continue
        team: KnownTeam | None = by_name.get(e.team)
        if team is None:
            like = confusable_with(e.team, existing_names)
            if like is not None:
                problems.append(f"{where}: the team {e.team!r} looks like {like!r}, which exists")
                continue
        first = file_teams.setdefault(skeleton(e.team), e.team)
        if first != e.team:
            problems.append(
                f"{where}: the team {e.team!r} looks like {first!r}, another team in this file"
            )
            continue
        if team is not None and team.organiser:
            problems.append(f"{where}: {e.team!r} is the organiser, not a team")
            continue
        if e.staff is not None:
            said = team_staff.setdefault(e.team, (e.staff, e.line))
            if said[0] != e.staff:
                problems.append(
                    f"{where}: team {e.team!r} is {'staff' if e.staff else 'not staff'} here "
                    f"but {'staff' if said[0] else 'not staff'} on line {said[1]}"
                )
                continue
        key = (e.team, e.member.casefold())
        if key in seen_members:
            problems.append(
                f"{where}: {e.member!r} is in team {e.team!r} twice (line {seen_members[key]})"
            )
            continue
        seen_members[key] = e.line
        if e.email is not None:
            other = email_team.setdefault(e.email.casefold(), e.team)
            if other != e.team:
                problems.append(f"{where}: {e.email} is already in team {other!r}")
                continue
        stored = None if team is None else _stored_member(team, e.member)
        if stored is None:
            plan.new_members.append(e)
        elif (stored[1] or None) != e.email and e.email is not None:
            problems.append(
                f"{where}: {e.member!r} of team {e.team!r} has the email {stored[1] or 'none'} "
                f"in the store, not {e.email}"
            )
        else:
            plan.unchanged += 1
    if problems:
        raise RosterRejected(problems)
    for name, (is_staff, _line) in team_staff.items():
        known_team = by_name.get(name)
        if known_team is None:
            plan.new_teams[name] = is_staff
        elif known_team.staff != is_staff:
            plan.staff_changes[name] = is_staff
    for e in entries:
        if e.team not in by_name:
            plan.new_teams.setdefault(e.team, False)
    return plan


def _stored_member(team: KnownTeam, name: str) -> tuple[str, str | None] | None:
    for member, email in team.members.items():
        if member.casefold() == name.casefold():
            return member, email
    return None
