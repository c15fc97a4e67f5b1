"""`arena roster` and `arena token --member/--staff` as an organiser runs them: one token
per new member, written once to a 0600 file; the same roster again changes nothing; any
bad line is named with its number, exits 2 and writes nothing."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the server extra is not installed")

from arena.competition.config import load_competition
from arena.store.competition import CompetitionStore

REPO = Path(__file__).resolve().parents[2]
ROSTER = (
    "team,member,email,staff\n"
    "Red,ann,ann@uni.edu,\n"
    "Red,ben,ben@uni.edu,no\n"
    "Blue,cat,,\n"
    "Tutors,dr who,who@uni.edu,yes\n"
)


def arena(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def toml(tmp_path: Path) -> Path:
    path = tmp_path / "competition.toml"
    path.write_text('[competition]\nname = "course"\n')
    return path


def _store(toml: Path) -> CompetitionStore:
    return CompetitionStore.open(load_competition(toml).store_url)


def _tokens(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_import_writes_one_token_per_member_once(toml: Path, tmp_path: Path) -> None:
    roster = tmp_path / "teams.csv"
    roster.write_text(ROSTER)
    out = tmp_path / "tokens.csv"
    done = arena("roster", "import", toml, roster, "--tokens-out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 new teams, 4 new members" in done.stdout and "tokens.csv" in done.stdout
    assert out.stat().st_mode & 0o777 == 0o600
    rows = _tokens(out)
    assert [(r["team"], r["member"], r["email"]) for r in rows] == [
        ("Red", "ann", "ann@uni.edu"),
        ("Red", "ben", "ben@uni.edu"),
        ("Blue", "cat", ""),
        ("Tutors", "dr who", "who@uni.edu"),
    ]
    with _store(toml) as store:
        for row in rows:
            who = store.author_by_token(row["token"])
            assert who is not None and (who.name, who.member_name) == (row["team"], row["member"])
        assert {a.name for a in store.authors() if a.staff} == {"Tutors"}
    # the same roster again: nothing changes, no token is issued, the file is kept
    before = out.read_bytes()
    again = arena("roster", "import", toml, roster, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "0 new teams, 0 new members: nothing to do" in again.stdout
    refused = arena("roster", "import", toml, roster, "--tokens-out", out, cwd=tmp_path)
    assert refused.returncode == 2 and "exists" in refused.stderr and "--force" in refused.stderr
    assert out.read_bytes() == before
    # one new line: one new token, printed when no file is named
    roster.write_text(ROSTER + "Blue,dan,dan@uni.edu,no\n")
    grown = arena("roster", "import", toml, roster, cwd=tmp_path)
    assert grown.returncode == 0, grown.stderr
    printed = grown.stdout.split("\n", 1)[1]
    assert [(r["team"], r["member"]) for r in _tokens_text(printed)] == [("Blue", "dan")]
    forced = arena("roster", "import", toml, roster, "--tokens-out", out, "--force", cwd=tmp_path)
    assert forced.returncode == 0 and _tokens(out) == []  # nothing new: a header only
    listed = arena("roster", "list", toml, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "Tutors [staff]: 1 member" in listed.stdout and "Blue: 2 members" in listed.stdout
    assert "  dan <dan@uni.edu>" in listed.stdout


def _tokens_text(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


BAD_LINES = [
    ("name,email\nRed,ann\n", "line 1: the header must be 'team,member,email'"),
    ("team,member,email\n,ann,a@uni.edu\n", "line 2: empty team"),
    ("team,member,email\nRed,,a@uni.edu\n", "line 2: empty member"),
    ("team,member,email\nRed,ann,not-an-address\n", "line 2: 'not-an-address' is not an email"),
    ("team,member,email\nRed,ann\n", "line 2: 2 fields, the header has 3"),
    ("team,member,email,staff\nRed,ann,,maybe\n", "line 2: staff is 'maybe': use yes or no"),
    (
        "team,member,email\nRed,ann,a@uni.edu\nRed,Ann,b@uni.edu\n",
        "line 3: 'Ann' is in team 'Red' twice (line 2)",
    ),
    (
        "team,member,email\nRed,ann,a@uni.edu\nBlue,bo,a@uni.edu\n",
        "line 3: a@uni.edu is already in team 'Red'",
    ),
    (
        "team,member,email\nRed1,ann,\nRedl,bo,\n",
        "line 3: the team 'Redl' looks like 'Red1', another team in this file",
    ),
    ("team,member,email\nG0LD,ann,\n", "line 2: the team 'G0LD' looks like 'GOLD', which exists"),
    ("team,member,email\nRe\u0434,ann,\n", "line 2: the team 'Re\u0434' mixes scripts"),
    (
        "team,member,email,staff\nRed,ann,,yes\nRed,bo,,no\n",
        "line 3: team 'Red' is not staff here but staff on line 2",
    ),
    ("team,member,email\norganiser,ann,\n", "line 2: 'organiser' is the organiser, not a team"),
]


@pytest.mark.parametrize(("text", "message"), BAD_LINES)
def test_a_bad_line_is_named_and_nothing_is_written(
    toml: Path, tmp_path: Path, text: str, message: str
) -> None:
    with _store(toml) as store:
        store.create_author("GOLD")
        store.create_author("organiser", organiser=True)
    roster = tmp_path / "teams.csv"
    roster.write_text(text)
    out = tmp_path / "tokens.csv"
    done = arena("roster", "import", toml, roster, "--tokens-out", out, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() and list(tmp_path.glob(".tokens.csv.*")) == []
    with _store(toml) as store:
        assert {a.name for a in store.authors()} == {"GOLD", "organiser"}
        assert store.members() == []


def test_good_lines_of_a_bad_roster_are_not_imported(toml: Path, tmp_path: Path) -> None:
    roster = tmp_path / "teams.csv"
    roster.write_text("team,member,email\nGreen,gus,gus@uni.edu\nGreen,,x@uni.edu\nGrey,g,\n")
    done = arena("roster", "import", toml, roster, cwd=tmp_path)
    assert done.returncode == 2 and "1 bad line (nothing imported)" in done.stderr
    assert "line 3: empty member" in done.stderr and "gus" not in done.stdout
    with _store(toml) as store:
        assert store.authors() == [] and store.members() == []


def test_a_missing_or_binary_roster_is_a_clear_error(toml: Path, tmp_path: Path) -> None:
    missing = arena("roster", "import", toml, tmp_path / "nope.csv", cwd=tmp_path)
    assert missing.returncode == 2 and "no roster file" in missing.stderr
    binary = tmp_path / "teams.xlsx"
    binary.write_bytes(b"PK\x03\x04\xff\xfe\x00")
    done = arena("roster", "import", toml, binary, cwd=tmp_path)
    assert done.returncode == 2 and "not UTF-8" in done.stderr and "Traceback" not in done.stderr


def test_token_renews_a_member_and_marks_staff(toml: Path, tmp_path: Path) -> None:
    roster = tmp_path / "teams.csv"
    roster.write_text(ROSTER)
    out = tmp_path / "tokens.csv"
    assert (
        arena("roster", "import", toml, roster, "--tokens-out", out, cwd=tmp_path).returncode == 0
    )
    old = {r["member"]: r["token"] for r in _tokens(out)}
    renewed = arena("token", toml, "Red", "--member", "ann", "--renew", cwd=tmp_path)
    assert renewed.returncode == 0, renewed.stderr
    assert "new token for ann (team Red)" in renewed.stdout
    new = renewed.stdout.strip().splitlines()[-1]
    with _store(toml) as store:
        assert store.author_by_token(old["ann"]) is None
        ann = store.author_by_token(new)
        assert ann is not None and ann.member_name == "ann"
        assert store.author_by_token(old["ben"]) is not None  # ben's token still works
    nobody = arena("token", toml, "Red", "--member", "zed", "--renew", cwd=tmp_path)
    assert nobody.returncode == 2 and "no member named 'zed'" in nobody.stderr
    staff = arena("token", toml, "Blue", "--staff", cwd=tmp_path)
    assert staff.returncode == 0 and "Blue is now a staff team" in staff.stdout
    baseline = arena("token", toml, "baseline", "--staff", cwd=tmp_path)
    assert baseline.returncode == 0 and "staff team token for baseline" in baseline.stdout
    with _store(toml) as store:
        assert {a.name for a in store.authors() if a.staff} == {"Tutors", "Blue", "baseline"}
    added = arena(
        "roster", "add-member", toml, "Blue", "eve", "--email", "eve@uni.edu", cwd=tmp_path
    )
    assert added.returncode == 0 and "token for eve (team Blue)" in added.stdout
    blank = arena("roster", "add-member", toml, "Blue", " ", cwd=tmp_path)
    assert blank.returncode == 2 and "error: empty member" in blank.stderr
    taken = arena(
        "roster", "add-member", toml, "Red", "zoe", "--email", "who@uni.edu", cwd=tmp_path
    )
    assert taken.returncode == 2 and "who@uni.edu is already in team 'Tutors'" in taken.stderr
    removed = arena("roster", "remove-member", toml, "Blue", "eve", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert "  eve" not in arena("roster", "list", toml, cwd=tmp_path).stdout
