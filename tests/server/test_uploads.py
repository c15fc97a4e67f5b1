"""unpack_upload against the hostile-upload corpus (tests/server/upload_corpus.py).

Every hostile archive must be refused with a reason an author can act on, must write
nothing outside its folder, and must leave nothing behind; good archives (zip or
tar.gz, by content whatever their name, bot at the top or in one folder) unpack to a
folder holding a valid bot.toml.
"""

from __future__ import annotations

import os
import stat
import tarfile
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from arena.competition.config import UploadLimits
from arena.errors import ArenaError
from arena.server.uploads import UploadRejected, unpack_upload

from .upload_corpus import (
    BOT_PY,
    BOT_TOML,
    MIB,
    Member,
    RawEntry,
    files,
    make_raw_zip,
    make_tgz,
    make_zip,
    many_files_tgz,
    stored,
    tgz_bomb,
    zero_deflate,
    zip_bomb,
)

Maker = Callable[[Path, list[Member]], Path]
FORMATS: list[tuple[str, Maker]] = [("zip", make_zip), ("tgz", make_tgz)]
both = pytest.mark.parametrize(("fmt", "make"), FORMATS, ids=[f for f, _ in FORMATS])


def rejected(archive: Path, tmp_path: Path, limits: UploadLimits | None = None) -> str:
    """The reason ``archive`` is refused; checks nothing was left or written outside."""
    dest = tmp_path / "unpacked"
    before = set(tmp_path.iterdir())
    with pytest.raises(UploadRejected) as info:
        unpack_upload(archive, dest, limits or UploadLimits())
    assert not dest.exists(), "a refused upload leaves nothing behind"
    assert set(tmp_path.iterdir()) == before, "nothing written beside the folder"
    reason = info.value.reason
    assert reason and str(tmp_path) not in reason, "the reason never shows server paths"
    return reason


# ---------------------------------------------------------------- good uploads


@both
def test_a_good_bot_at_the_top_unpacks(fmt: str, make: Maker, tmp_path: Path) -> None:
    archive = make(tmp_path / f"bot.{fmt}", files(Member("lib/util.py", b"x = 1\n", mode=0o755)))
    folder = unpack_upload(archive, tmp_path / "out", UploadLimits())
    assert folder == (tmp_path / "out").resolve()
    assert (folder / "bot.toml").read_bytes() == BOT_TOML
    assert (folder / "bot.py").read_bytes() == BOT_PY
    assert stat.S_IMODE((folder / "lib/util.py").stat().st_mode) == 0o755
    assert stat.S_IMODE((folder / "bot.py").stat().st_mode) == 0o644


@both
def test_a_single_top_level_folder_is_the_bot(fmt: str, make: Maker, tmp_path: Path) -> None:
    archive = make(tmp_path / "a", files(top="my-bot"))
    folder = unpack_upload(archive, tmp_path / "out", UploadLimits())
    assert folder.name == "my-bot" and (folder / "bot.py").read_bytes() == BOT_PY


def test_format_is_detected_by_content_not_name(tmp_path: Path) -> None:
    zipped = make_zip(tmp_path / "really-a-zip.tar.gz", files())
    tarred = make_tgz(tmp_path / "really-a-tgz.zip", files())
    assert (unpack_upload(zipped, tmp_path / "a") / "bot.toml").is_file()
    assert (unpack_upload(tarred, tmp_path / "b") / "bot.toml").is_file()


def test_tar_of_dot_with_dot_slash_names_unpacks(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "bot.toml").write_bytes(BOT_TOML)
    (src / "bot.py").write_bytes(BOT_PY)
    archive = tmp_path / "dot.tgz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(src, arcname=".")  # names "./", "./bot.toml": what `tar czf x.tgz .` makes
    assert (unpack_upload(archive, tmp_path / "out") / "bot.py").read_bytes() == BOT_PY


def test_macos_resource_forks_are_left_out(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "mac.zip",
        [*files(top="bot"), Member("__MACOSX/bot/._bot.toml", b"\x00\x05\x16\x07junk")],
    )
    folder = unpack_upload(archive, tmp_path / "out")
    assert folder.name == "bot"
    assert not (tmp_path / "out" / "__MACOSX").exists()


@both
def test_symlinks_inside_are_kept(fmt: str, make: Maker, tmp_path: Path) -> None:
    archive = make(
        tmp_path / "a",
        files(
            Member("src/main.py", b"pass\n"),
            Member("main.py", kind="symlink", target="src/main.py"),
            Member("src/up", kind="symlink", target=".."),
        ),
    )
    folder = unpack_upload(archive, tmp_path / "out")
    assert os.readlink(folder / "main.py") == "src/main.py"
    assert (folder / "main.py").read_bytes() == b"pass\n"


# ---------------------------------------------------------------- paths that leave the folder


@both
@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("../evil.txt", "zip-slip"),
        ("a/../../evil.txt", "zip-slip"),
        ("/tmp/evil.txt", "absolute"),
        ("C:/evil.txt", "drive letter"),
        ("C:evil.txt", "drive letter"),
        ("..\\evil.txt", "backslash"),
        ("a\\..\\..\\evil.txt", "backslash"),
    ],
)
def test_paths_leaving_the_folder_are_refused(
    fmt: str, make: Maker, name: str, words: str, tmp_path: Path
) -> None:
    archive = make(tmp_path / "a", files(Member(name, b"owned")))
    assert words in rejected(archive, tmp_path)
    assert not list(tmp_path.rglob("evil.txt")) and not Path("/tmp/evil.txt").exists()


@both
@pytest.mark.parametrize(
    "target", ["/etc/passwd", "../outside", "../../../../etc", "a/../../x", "C:/x"]
)
def test_symlinks_leaving_the_folder_are_refused(
    fmt: str, make: Maker, target: str, tmp_path: Path
) -> None:
    archive = make(tmp_path / "a", files(Member("link", kind="symlink", target=target)))
    assert "symlink" in rejected(archive, tmp_path)


@both
def test_a_chain_of_inside_links_that_leaves_is_refused(
    fmt: str, make: Maker, tmp_path: Path
) -> None:
    # Each link's text stays inside ("a/s/.." is "."), but a/s -> .. makes t the parent.
    archive = make(
        tmp_path / "a",
        files(
            Member("a/s", kind="symlink", target=".."),
            Member("t", kind="symlink", target="a/s/.."),
        ),
    )
    assert "'t' is a symlink that leaves the folder" in rejected(archive, tmp_path)


@both
def test_a_file_through_a_symlink_is_refused(fmt: str, make: Maker, tmp_path: Path) -> None:
    archive = make(
        tmp_path / "a",
        files(Member("d", kind="symlink", target="."), Member("d/x.txt", b"through the link")),
    )
    assert "both a link and a folder" in rejected(archive, tmp_path)


def test_hard_links_are_refused(tmp_path: Path) -> None:
    for target in ("/etc/passwd", "bot.py"):
        archive = make_tgz(tmp_path / "a.tgz", files(Member("h", kind="hardlink", target=target)))
        assert "hard link" in rejected(archive, tmp_path)


@pytest.mark.parametrize(
    ("fmt", "kind"),
    [
        ("zip", "chr"),
        ("zip", "blk"),
        ("zip", "fifo"),
        ("zip", "sock"),
        ("tgz", "chr"),
        ("tgz", "blk"),
        ("tgz", "fifo"),
    ],
)
def test_special_files_are_refused(fmt: str, kind: str, tmp_path: Path) -> None:
    make = make_zip if fmt == "zip" else make_tgz
    archive = make(tmp_path / "a", files(Member("special", kind=kind)))
    reason = rejected(archive, tmp_path)
    assert "'special' is a" in reason and "only files, folders and symlinks" in reason


@both
@pytest.mark.parametrize("mode", [0o4755, 0o2755])
def test_setuid_and_setgid_are_refused(fmt: str, make: Maker, mode: int, tmp_path: Path) -> None:
    archive = make(tmp_path / "a", files(Member("suid", b"#!/bin/sh\n", mode=mode)))
    assert "setuid or setgid" in rejected(archive, tmp_path)


@both
def test_a_setgid_folder_is_harmless_and_accepted(fmt: str, make: Maker, tmp_path: Path) -> None:
    archive = make(tmp_path / "a", files(Member("shared", kind="dir", mode=0o2775)))
    folder = unpack_upload(archive, tmp_path / "out")
    assert stat.S_IMODE((folder / "shared").stat().st_mode) == 0o755


# ---------------------------------------------------------------- names


@both
def test_duplicate_names_are_refused(fmt: str, make: Maker, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it writes
        archive = make(tmp_path / "a", files(Member("bot.py", b"second copy")))
    assert "'bot.py' appears twice" in rejected(archive, tmp_path)


@both
def test_control_characters_in_names_are_refused_and_shown_escaped(
    fmt: str, make: Maker, tmp_path: Path
) -> None:
    archive = make(tmp_path / "a", files(Member("a\x1b[2Jb.txt", b"x")))
    reason = rejected(archive, tmp_path)
    assert "control characters" in reason and "\x1b" not in reason and "\\x1b" in reason


def test_non_utf8_names_are_refused(tmp_path: Path) -> None:
    tgz = make_tgz(tmp_path / "a.tgz", files(Member("caf\udce9.txt", b"latin-1 name")))
    assert "not UTF-8" in rejected(tgz, tmp_path)
    # A zip without the UTF-8 flag whose name bytes are not UTF-8 (a legacy code page).
    raw = make_raw_zip(
        tmp_path / "b.zip", [stored("bot.toml", BOT_TOML), stored("caf\xe9.txt", b"x")]
    )
    data = raw.read_bytes().replace("caf\xe9".encode(), b"ca\xff\xfe\xfd")
    raw.write_bytes(data)
    assert "not UTF-8" in rejected(raw, tmp_path)


def test_a_zip_name_flagged_utf8_that_is_not_says_so(tmp_path: Path) -> None:
    # The UTF-8 flag (bit 11) set on bytes that are not UTF-8: zipfile itself fails to
    # decode it; the author hears the reason the tar path gives, not a codec error.
    raw = make_raw_zip(
        tmp_path / "c.zip",
        [stored("bot.toml", BOT_TOML), stored("caf\xe9.txt", b"x", flags=0x800)],
    )
    raw.write_bytes(raw.read_bytes().replace("caf\xe9".encode(), b"ca\xff\xfe\xfd"))
    reason = rejected(raw, tmp_path)
    assert reason.endswith("the name is not UTF-8"), reason
    assert "codec" not in reason


def test_utf8_names_without_the_zip_flag_are_accepted(tmp_path: Path) -> None:
    # Info-ZIP on Linux writes UTF-8 names without setting the flag.
    archive = make_raw_zip(
        tmp_path / "a.zip",
        [stored("bot.toml", BOT_TOML), stored("bot.py", BOT_PY), stored("café.txt", b"x")],
    )
    assert (unpack_upload(archive, tmp_path / "out") / "café.txt").read_bytes() == b"x"


# ---------------------------------------------------------------- sizes and bombs


def test_zip_bomb_1gib_is_refused_quickly(tmp_path: Path) -> None:
    archive = zip_bomb(tmp_path / "bomb.zip")
    assert archive.stat().st_size < 2 * MIB
    started = time.perf_counter()
    reason = rejected(archive, tmp_path)
    assert "more than 128 MiB" in reason or "expands more than" in reason
    assert time.perf_counter() - started < 30  # a safety net only: it takes milliseconds


def test_tgz_bomb_declaring_1gib_is_refused(tmp_path: Path) -> None:
    reason = rejected(tgz_bomb(tmp_path / "bomb.tgz"), tmp_path)
    assert "more than 128 MiB" in reason or "expands more than" in reason


def test_bytes_are_capped_while_streaming_not_only_as_declared(tmp_path: Path) -> None:
    # A pax extended header declaring 1 GiB: tarfile would read it all into memory.
    # The decompressed stream is counted as it is read: refused after about 1 MiB.
    archive = tgz_bomb(tmp_path / "pax.tgz", kind=tarfile.XHDTYPE)
    started = time.perf_counter()
    assert "tar headers take more than 1028 KiB" in rejected(archive, tmp_path)
    assert time.perf_counter() - started < 30  # a safety net only: it takes milliseconds


def test_long_names_in_pax_headers_are_fine(tmp_path: Path) -> None:
    names = [f"data/{'é' * 90}-{i}.txt" for i in range(300)]  # a pax header each
    archive = make_tgz(tmp_path / "a.tgz", files(*(Member(n, b"x" * 10) for n in names)))
    folder = unpack_upload(archive, tmp_path / "out")
    assert len(list((folder / "data").iterdir())) == 300


def test_an_unusual_compression_ratio_is_refused(tmp_path: Path) -> None:
    archive = make_tgz(tmp_path / "a.tgz", files(Member("table.bin", b"\0" * (20 * MIB))))
    assert archive.stat().st_size < 100_000
    assert "expands more than 200 times" in rejected(archive, tmp_path)
    # ...and the organiser can allow it.
    limits = UploadLimits(max_ratio=100_000)
    assert (unpack_upload(archive, tmp_path / "out", limits) / "table.bin").stat().st_size == (
        20 * MIB
    )


def test_too_many_bytes_is_refused_below_the_ratio(tmp_path: Path) -> None:
    data = os.urandom(3 * MIB)  # incompressible: the ratio stays 1
    archive = make_zip(tmp_path / "a.zip", files(Member("big.bin", data)))
    reason = rejected(archive, tmp_path, UploadLimits(unpacked_mb=2))
    assert "more than 2 MiB" in reason


def test_an_archive_inside_the_archive_is_kept_as_a_file_never_expanded(tmp_path: Path) -> None:
    # Decision: nested archives (42.zip style) are ordinary files; the arena never
    # unpacks recursively, so they cost their own bytes only.
    inner = zip_bomb(tmp_path / "inner.zip").read_bytes()
    archive = make_zip(tmp_path / "outer.zip", files(Member("data/inner.zip", inner)))
    folder = unpack_upload(archive, tmp_path / "out")
    assert (folder / "data/inner.zip").read_bytes() == inner
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert total < 2 * MIB


def test_an_oversized_archive_is_refused_before_unpacking(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", files(Member("noise", os.urandom(2 * MIB))))
    assert "accepts at most 1 MiB" in rejected(archive, tmp_path, UploadLimits(upload_mb=1))


def test_100k_files_in_a_zip_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bot.toml", BOT_TOML)
        for i in range(100_000):
            zf.writestr(f"f{i}", b"")
    assert "at most 10000 files" in rejected(archive, tmp_path)


def test_100k_files_in_a_tgz_are_refused(tmp_path: Path) -> None:
    archive = many_files_tgz(tmp_path / "many.tgz", 100_000)
    assert "more than 10000 files" in rejected(archive, tmp_path)


def test_declared_and_actual_sizes_must_agree(tmp_path: Path) -> None:
    # A zip entry declaring 10 bytes but holding 4 (stored): zipfile stops short.
    short = make_raw_zip(
        tmp_path / "a.zip",
        [stored("bot.toml", BOT_TOML), RawEntry(b"x.bin", b"abcd", 10, method=0)],
    )
    assert "damaged" in rejected(short, tmp_path) or "declares" in rejected(short, tmp_path)
    # A zip entry declaring 1 KiB but deflating to 1 GiB: never more than declared.
    lying = make_raw_zip(
        tmp_path / "b.zip",
        [stored("bot.toml", BOT_TOML), RawEntry(b"x.bin", zero_deflate(1024), 1024)],
    )
    assert "damaged" in rejected(lying, tmp_path)
    # A tar member whose data is cut short.
    tgz = make_tgz(tmp_path / "c.tgz", files(Member("x.bin", os.urandom(5000))))
    import gzip

    raw = gzip.decompress(tgz.read_bytes())
    cut = tmp_path / "d.tgz"
    cut.write_bytes(gzip.compress(raw[: raw.find(b"x.bin") + 512 + 1000]))
    assert "damaged" in rejected(cut, tmp_path)


def test_encrypted_zip_entries_are_refused(tmp_path: Path) -> None:
    archive = make_raw_zip(
        tmp_path / "a.zip", [stored("bot.toml", BOT_TOML), stored("secret", b"x", flags=1)]
    )
    assert "encrypted" in rejected(archive, tmp_path)


# ---------------------------------------------------------------- not a bot


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty (0 bytes)"),
        (b"just some text\n", "not a .zip or .tar.gz"),
        (b"BZh91AY&SY" + b"\0" * 40, "bzip2"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 40, "damaged"),
    ],
)
def test_things_that_are_not_archives(content: bytes, words: str, tmp_path: Path) -> None:
    path = tmp_path / "upload"
    path.write_bytes(content)
    assert words in rejected(path, tmp_path)


def test_a_plain_tar_is_named(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar"
    with tarfile.open(archive, "w") as tf:
        tf.add(make_tgz(tmp_path / "x.tgz", files()), arcname="x")
    assert "uncompressed tar" in rejected(archive, tmp_path)


def test_gzip_that_is_not_a_tar(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "a.gz"
    path.write_bytes(gzip.compress(b"hello, not a tar archive at all" * 100))
    assert "damaged or unsupported .tar.gz" in rejected(path, tmp_path)


@both
def test_empty_archives(fmt: str, make: Maker, tmp_path: Path) -> None:
    assert "empty" in rejected(make(tmp_path / "a", []), tmp_path)


@both
@pytest.mark.parametrize(
    ("members", "words"),
    [
        ([Member("bot.py", BOT_PY)], "no bot.toml"),
        ([Member("a/bot.toml", BOT_TOML), Member("b/x", b"")], "no bot.toml"),
        ([Member("bot/bot.py", BOT_PY)], "no bot.toml in the archive's folder 'bot'"),
        ([Member("bot.toml", b"name = [unclosed")], "not valid TOML"),
        ([Member("bot.toml", b'name = "x"\n')], "command"),
        ([Member("bot.toml", b'name = "../../x"\ncommand = "a"\n')], "name"),
        ([Member("bot.toml", b'name = "x"\ncommand = "a"\nevil = 1\n')], "evil"),
        ([Member("bot.toml", kind="symlink", target="bot.py")], "bot.toml must be a regular"),
        ([Member("bot.toml", kind="dir")], "bot.toml must be a regular"),
    ],
)
def test_a_missing_or_invalid_manifest_is_refused(
    fmt: str, make: Maker, members: list[Member], words: str, tmp_path: Path
) -> None:
    assert words in rejected(make(tmp_path / "a", members), tmp_path)


# ---------------------------------------------------------------- limits and environment


def test_limits_have_defaults_and_refuse_unknown_keys() -> None:
    limits = UploadLimits()
    assert (limits.upload_mb, limits.unpacked_mb, limits.max_files) == (16, 128, 10_000)
    assert limits.build_limits().timeout_s == 300 and limits.build_limits().memory_bytes == (
        2048 * MIB
    )
    with pytest.raises(ValidationError):
        UploadLimits.model_validate({"upload_mbs": 3})
    with pytest.raises(ValidationError):
        UploadLimits(max_files=0)


def test_an_unwritable_destination_is_an_arena_error_not_a_rejection(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", files())
    with pytest.raises(ArenaError) as info:
        unpack_upload(archive, tmp_path / "missing" / "out")
    assert not isinstance(info.value, UploadRejected)


# ---------------------------------------------------------------- property: never outside

_PART = st.sampled_from(["a", "b", "..", ".", "", "/", "C:", "bot.toml", "\\", "x\x00", "é"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.lists(st.lists(_PART, min_size=1, max_size=4).map("/".join), max_size=5),
    links=st.lists(
        st.tuples(
            st.sampled_from(["l", "a/l", "b/c/l"]), st.lists(_PART, max_size=4).map("/".join)
        ),
        max_size=3,
    ),
    fmt=st.sampled_from(["zip", "tgz"]),
)
def test_nothing_is_ever_written_outside_the_folder(
    names: list[str],
    links: list[tuple[str, str]],
    fmt: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    members = files(*(Member(n, b"x") for n in names if n))
    members += [Member(p, kind="symlink", target=t) for p, t in links]
    make = make_zip if fmt == "zip" else make_tgz
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            archive = make(tmp / "a", members)
        except (ValueError, UnicodeError):
            return  # the writer itself refuses the name (a NUL in a zip name...)
    dest = tmp / "out"
    try:
        unpack_upload(archive, dest)
    except UploadRejected:
        assert not dest.exists()
        return
    root = dest.resolve()
    for path in dest.rglob("*"):
        real = Path(os.path.realpath(path))
        assert real == root or root in real.parents, f"{path} resolves to {real}"
    assert sorted(p.name for p in tmp.iterdir()) == ["a", "out"]


# ---------------------------------------------------------------- property: damaged archives


@settings(
    max_examples=int(os.environ.get("ARENA_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    fmt=st.sampled_from(["zip", "tgz"]),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.integers(0, 10_000)),
)
def test_a_damaged_archive_is_a_rejection_never_a_crash(
    fmt: str,
    flips: list[tuple[int, int]],
    cut: int | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Any corruption of a good archive ends in a folder or an UploadRejected (a reason
    for the author), never another exception (a traceback on the server)."""
    tmp = tmp_path_factory.mktemp("damaged")
    make = make_zip if fmt == "zip" else make_tgz
    extra = [Member(f"lib/m{i}.py", f"X = {i}\n".encode() * 20) for i in range(5)]
    data = bytearray(
        make(tmp / "good", files(*extra, Member("l", kind="symlink", target="lib"))).read_bytes()
    )
    for at, value in flips:
        data[at % len(data)] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    archive = tmp / "damaged"
    archive.write_bytes(bytes(data))
    dest = tmp / "out"
    try:
        folder = unpack_upload(archive, dest)
    except UploadRejected:
        assert not dest.exists()
    else:
        assert (folder / "bot.toml").is_file()
