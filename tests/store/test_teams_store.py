"""Teams in the competition store, on SQLite and PostgreSQL: a store of revision 0002 with
authors, sessions and bots upgrades to teams, a roster imports once, a member's token is
the team, and staff bots keep out of the prize ranks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from arena.store.competition import CompetitionStore, NotFound, hash_token
from arena.store.migrations import alembic_config, current_revision, head_revision
from arena.store.roster import RosterRejected, parse_roster
from arena.store.upgrade import upgrade

ROSTER = (
    "team,member,email,staff\n"
    "Red,ann,ann@uni.edu,\n"
    "Red,ben,ben@uni.edu,no\n"
    "Blue,cat,,\n"
    "Tutors,dr who,who@uni.edu,yes\n"
)


def _store_at_0002(url: str) -> None:
    """A store migrated to revision 0002 only, with an author, a live session and a bot."""
    from alembic import command

    engine = sa.create_engine(url)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0002")  # type: ignore[arg-type]
        assert current_revision(conn) == "0002"
        conn.execute(
            sa.text(
                "INSERT INTO authors (name, organiser, token_hash, created) "
                "VALUES ('Red', false, :h, :t)"
            ),
            {"h": hash_token("red-token"), "t": now},
        )
        conn.execute(
            sa.text(
                "INSERT INTO sessions (token_hash, author_id, created, expires) "
                "VALUES (:h, 1, :t, :e)"
            ),
            {"h": hash_token("red-session"), "t": now, "e": now + timedelta(hours=1)},
        )
        conn.execute(
            sa.text(
                "INSERT INTO bots (name, author_id, disqualified, created) "
                "VALUES ('redbot', 1, false, :t)"
            ),
            {"t": now},
        )
    engine.dispose()


def test_a_0002_store_with_data_upgrades_to_teams(database_url: str) -> None:
    _store_at_0002(database_url)
    done = upgrade(database_url)
    assert (done.before, done.after) == ("0002", head_revision())
    with CompetitionStore.open(database_url) as store:
        red = store.author_by_token("red-token")
        assert red is not None and red.name == "Red" and not red.staff and red.member_id is None
        assert store.author_by_session("red-session") == red  # sessions survive
        assert store.staff_author_ids() == set()
        bot = store.bot("redbot")
        assert bot is not None and bot.author_name == "Red" and not bot.staff
        # the existing author becomes a team: the roster adds members to it
        issued = store.import_roster(parse_roster(ROSTER))
        assert {(m.team, m.name) for m, _ in issued} == {
            ("Red", "ann"),
            ("Red", "ben"),
            ("Blue", "cat"),
            ("Tutors", "dr who"),
        }
        ann_token = next(t for m, t in issued if m.name == "ann")
        ann = store.author_by_token(ann_token)
        assert ann is not None and (ann.id, ann.member_name) == (red.id, "ann")
        assert ann.who == "ann (team Red)"


def test_a_roster_imports_once(database_url: str) -> None:
    with CompetitionStore.open(database_url) as store:
        first = store.import_roster(parse_roster(ROSTER))
        assert len(first) == 4 and len({t for _, t in first}) == 4
        teams = {a.name: a for a in store.authors()}
        assert set(teams) == {"Red", "Blue", "Tutors"}
        assert store.staff_author_ids() == {teams["Tutors"].id}
        assert store.import_roster(parse_roster(ROSTER)) == []  # the same file: no-op
        assert [m.name for m in store.members("Red")] == ["ann", "ben"]
        grown = store.import_roster(parse_roster(ROSTER + "Blue,dan,dan@uni.edu,\n"))
        assert [(m.team, m.name, m.email) for m, _ in grown] == [("Blue", "dan", "dan@uni.edu")]
        hashes = {hash_token(t) for _, t in first + grown}
        engine = sa.create_engine(database_url)
        with engine.connect() as conn:
            stored = set(conn.execute(sa.text("SELECT token_hash FROM members")).scalars())
        engine.dispose()
        assert stored == hashes  # hashes only, one per member


def test_a_bad_roster_writes_nothing(database_url: str) -> None:
    with CompetitionStore.open(database_url) as store:
        store.create_author("Red")
        store.create_author("org", organiser=True)
        bad = (
            "team,member,email\n"
            "Green,gus,gus@uni.edu\n"  # good, but the file has bad lines
            "R\u0435d,eve,eve@uni.edu\n"  # Cyrillic e: looks like Red
            "Green,Gus,gus2@uni.edu\n"
            "Grey,gil,gus@uni.edu\n"
            "org,o,\n"
        )
        with pytest.raises(RosterRejected) as caught:
            store.import_roster(parse_roster(bad))
        assert [p.split(":")[0] for p in caught.value.problems] == [
            "line 3",
            "line 4",
            "line 5",
            "line 6",
        ]
        assert {a.name for a in store.authors()} == {"Red", "org"}
        assert store.members() == []


def test_member_tokens_renew_and_members_leave(database_url: str) -> None:
    with CompetitionStore.open(database_url) as store:
        tokens = {m.name: t for m, t in store.import_roster(parse_roster(ROSTER))}
        ann = store.author_by_token(tokens["ann"])
        ben = store.author_by_token(tokens["ben"])
        assert ann is not None and ben is not None and ann.id == ben.id
        ann_session = store.create_session(ann.id, 3600, ann.member_id)
        ben_session = store.create_session(ben.id, 3600, ben.member_id)
        seen = store.author_by_session(ann_session)
        assert seen is not None and seen.member_name == "ann"
        renewed = store.new_member_token("Red", "ann")
        assert store.author_by_token(tokens["ann"]) is None
        assert store.author_by_session(ann_session) is None
        again = store.author_by_token(renewed)
        assert again is not None and again.member_name == "ann"
        assert store.author_by_session(ben_session) is not None  # ben keeps his
        team_session = store.create_session(ben.id, 3600)  # signed in with the team's token
        store.new_token("Red")
        assert store.author_by_session(team_session) is None
        assert store.author_by_session(ben_session) is not None  # a member's is not the team's
        store.remove_member("Red", "ben")
        assert store.author_by_token(tokens["ben"]) is None
        assert store.author_by_session(ben_session) is None
        with pytest.raises(NotFound, match="no member named 'ben'"):
            store.new_member_token("Red", "ben")
