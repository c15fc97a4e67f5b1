"""Bot bundles and the node's sandbox check (no Ray needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from arena.play import ray_executor
from arena.play.bundles import Bundle, BundleError, pack, unpack
from arena.sandbox import Level
from arena.sandbox.layers import LayerStatus

REPO = Path(__file__).resolve().parents[2]


def test_pack_is_content_addressed_and_unpacks_identically(tmp_path: Path) -> None:
    a = tmp_path / "a"
    shutil.copytree(REPO / "bots" / "python-greedy", a)
    b = tmp_path / "b"
    shutil.copytree(REPO / "bots" / "python-greedy", b)
    (b / "bot.py").touch()  # a different mtime only: the same bundle
    first, second = pack("python-greedy", a), pack("python-greedy", b)
    assert first.digest == second.digest
    (b / "bot.py").write_text((b / "bot.py").read_text() + "\n# changed\n")
    assert pack("python-greedy", b).digest != first.digest
    folder = unpack(first, tmp_path / "cache")
    assert folder == tmp_path / "cache" / first.digest / "python-greedy"
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == sorted(
        p.relative_to(a) for p in a.rglob("*")
    )
    assert unpack(first, tmp_path / "cache") == folder  # once per node


def test_damaged_bundle_and_links_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "x").write_text("x")
    good = pack("bot", tmp_path / "bot")
    with pytest.raises(BundleError, match="damaged"):
        unpack(Bundle("bot", good.digest, good.data[:-1] + b"!"), tmp_path / "cache")
    (tmp_path / "bot" / "link").symlink_to("/etc/passwd")
    with pytest.raises(BundleError, match="link is a symbolic link"):
        pack("bot", tmp_path / "bot")


def test_a_node_weaker_than_strict_refuses_work(monkeypatch: pytest.MonkeyPatch) -> None:
    layers = [LayerStatus("namespaces", False, "bwrap is not installed")]
    monkeypatch.setattr("arena.sandbox.layers.detect_layers", lambda: layers)
    monkeypatch.setattr(ray_executor, "_NODE", {})
    ray_executor.node_check(Level.AUTO)  # auto runs with what the node has
    off = r"sandbox layers off: namespaces \(bwrap is not installed\)"
    with pytest.raises(ray_executor.NodeRefused, match=off):
        ray_executor.node_check(Level.STRICT)


def test_ray_missing_or_misconfigured_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from arena.errors import ArenaError
    from arena.tournament import ConfigError, load_config

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(ray_executor.RayUnavailable, match=r"pip install 'azul-arena\[ray\]'"):
        ray_executor.make_ray_executor([], Level.AUTO, None, None)
    assert issubclass(ray_executor.RayUnavailable, ArenaError)
    bots = [str(REPO / "bots" / "python-greedy"), str(REPO / "bots" / "python-random")]
    with pytest.raises(ConfigError, match="ray_address: only with executor = 'ray'"):
        load_config(None, {"bots": bots, "ray_address": "auto"})
