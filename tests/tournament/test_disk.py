"""A real full disk and a real read-only folder (a small tmpfs; needs root to mount):
a clear error with the resume command, no traceback, the store consistent, and the
resume completing once space is back."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.tournament import STORE_NAME, Store

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def tournament(out: Path) -> list[str]:
    bots = [str(REPO / "bots" / b) for b in ("python-greedy", "python-random")]
    return [sys.executable, "-m", "arena.cli", "tournament", "--quiet", "--bots", *bots,
            "--seeds", "60", "--workers", "1", "--out", str(out)]  # fmt: skip


def test_full_disk_then_read_only_then_resume(small_disk: Path) -> None:
    out = small_disk / "t"
    full = subprocess.run(tournament(out), capture_output=True, text=True, cwd=REPO)
    assert full.returncode == 2, full.stdout + full.stderr
    assert "the disk is full" in full.stderr
    assert "Resume with:" in full.stderr and "Traceback" not in full.stderr
    with Store(out / STORE_NAME, readonly=True) as store:
        assert store.integrity_problems() == []
        stored = store.finished_count()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    ro = subprocess.run(tournament(out), capture_output=True, text=True, cwd=REPO)
    assert ro.returncode == 2
    assert "cannot write here" in ro.stderr and "Resume with:" in ro.stderr
    assert "Traceback" not in ro.stderr
    subprocess.run(["mount", "-o", "remount,rw,size=50m", str(small_disk)], check=True)
    done = subprocess.run(tournament(out), capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    with Store(out / STORE_NAME, readonly=True) as store:
        assert store.finished_count() == store.scheduled_count() == 2 * 60
        assert store.finished_count() > stored
        assert store.integrity_problems() == []
