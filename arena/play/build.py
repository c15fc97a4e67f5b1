"""Stage and build bots once, before play and outside the clock, with a cache across runs.

Every submission, built or not, runs from a *staged* copy: the folder is copied under
the staging rules (regular files, folders and inside symlinks only, plain permissions,
a size budget), its build (if any) runs sandboxed on that copy, and the result is made
read-only.  The built copies live in a build cache, content-addressed by the staged
source and the build command, so an unchanged bot is built once across runs and
arena processes: entries are published by an atomic rename, checked against their
recorded content hash on every use (a damaged entry is never reused), and the least
recently used are removed past a size/count bound.

Next to them, under ``compiler/``, each bot keeps its own *compiler* cache (Go's build
cache, Cargo's target folder, npm's, ccache's when installed), so a one-line change
rebuilds in seconds rather than from scratch: see :func:`compiler_cache_for`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from arena.errors import ArenaError
from arena.referee.manifest import BotSpec, Built
from arena.sandbox import DEFAULT_LEVEL, BuildLimits, Level, build
from arena.sandbox.build import CompilerCache
from arena.sandbox.spec import MIB, SandboxError
from arena.sandbox.stage import StagingError, copy_checked, make_read_only, remove_tree

CACHE_ENV = "ARENA_BUILD_CACHE"
"""Environment variable naming the build cache folder (overrides the default)."""
CACHE_FORMAT = "azul-arena-build/1"
MAX_CACHE_ENTRIES = 256
MAX_CACHE_BYTES = 4 * 1024 * MIB
KEEP_RECENT_S = 24 * 3600.0
"""An entry used this recently is never collected (a running tournament may use it)."""
STALE_TMP_S = 24 * 3600.0
VERSION_LENGTH = 12
COMPILER_FOLDER = "compiler"
"""Under the build cache: one folder per bot identity, its compiler cache's archive."""
COMPILER_CAP_ENV = "ARENA_COMPILER_CACHE_MB"
COMPILER_TOTAL_ENV = "ARENA_COMPILER_CACHE_TOTAL_MB"
DEFAULT_COMPILER_CAP_MB = 512
DEFAULT_COMPILER_TOTAL_MB = 4096
COMPILER_ARCHIVE = "cache.tar"


class BuildError(ArenaError):
    """A bot could not be staged or built; the message says why (and names the limit).

    The bot's problem, not the arena's, but one the user must see as a message: callers
    that know the toolchains add advice (``explain_build_failure``); anything else that
    lets it through still reaches the CLI's one-line ``ArenaError`` handler."""


def tree_digest(folder: Path) -> str:
    """sha256 over every entry's relative path, type, executable bit and bytes.

    Symlinks count by their target text; timestamps and owners do not count, so the
    same bot copied elsewhere has the same digest.  Only for folders the arena made
    (staged copies): a hostile folder is never read in place.
    """
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(root, d))]):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder).encode("utf-8", "surrogateescape")
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                body = b"L" + os.readlink(path).encode("utf-8", "surrogateescape")
            elif stat.S_ISREG(st.st_mode):
                body = (b"X" if st.st_mode & 0o111 else b"F") + _file_digest(path)
            else:
                body = b"?"
            digest.update(len(rel).to_bytes(4, "big") + rel + body)
    return digest.hexdigest()


def content_hash(folder: Path) -> str:
    """The short version id of a folder's content (see :func:`tree_digest`)."""
    return tree_digest(folder)[:VERSION_LENGTH]


def _file_digest(path: str) -> bytes:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


def default_cache_root() -> Path:
    """``$ARENA_BUILD_CACHE``, else /var/cache/azul-arena/builds for root (every folder
    on the way is world-searchable, so bots under their own uids can reach it), else
    ``$XDG_CACHE_HOME/azul-arena/builds`` (``~/.cache/...``)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    if os.geteuid() == 0:
        return Path("/var/cache/azul-arena/builds")
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "azul-arena" / "builds"


def _open_cache(root: Path) -> Path:
    try:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        probe = root / f".probe-{os.getpid()}-{secrets.token_hex(4)}"
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise BuildError(
            f"cannot use the build cache {root}: {exc.strerror}; point {CACHE_ENV} at a "
            "writable folder"
        ) from None
    return root


def limits_for(spec: BotSpec, host: BuildLimits) -> BuildLimits:
    """The host's build limits, lowered (never raised) by the manifest."""
    m = spec.manifest
    timeout = host.timeout_s
    area = host.area_bytes
    if m.build_timeout is not None:
        if m.build_timeout > host.timeout_s:
            raise BuildError(
                f"{spec.name}: bot.toml asks for build_timeout = {m.build_timeout:g} s; this "
                f"arena allows at most {host.timeout_s:g} s"
            )
        timeout = m.build_timeout
    if m.size_limit_mb is not None:
        if m.size_limit_mb * MIB > host.area_bytes:
            raise BuildError(
                f"{spec.name}: bot.toml asks for size_limit_mb = {m.size_limit_mb}; this "
                f"arena allows at most {host.area_bytes // MIB}"
            )
        area = m.size_limit_mb * MIB
    return BuildLimits(
        timeout_s=timeout,
        area_bytes=area,
        memory_bytes=host.memory_bytes,
        max_processes=host.max_processes,
        max_entries=host.max_entries,
    )


def _valid_entry(entry: Path) -> dict[str, object] | None:
    """The entry's metadata if its built copy is intact, else None."""
    try:
        meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        bot = entry / "bot"
        if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
            return None
        if bot.is_symlink() or not bot.is_dir() or tree_digest(bot) != meta.get("digest"):
            return None
        return meta
    except (OSError, ValueError):
        return None


def _discard(root: Path, entry: Path) -> None:
    """Take an entry out of use atomically (rename), then delete it."""
    doomed = root / f"tmp-dead-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        entry.rename(doomed)
    except OSError:
        return
    remove_tree(doomed)


def _touch(entry: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(entry / "meta.json")


def _tmp_is_stale(path: Path, now: float) -> bool:
    parts = path.name.split("-")
    if len(parts) >= 3 and parts[1].isdigit() and not Path(f"/proc/{parts[1]}").exists():
        return True  # its arena process is gone
    try:
        return now - path.lstat().st_mtime > STALE_TMP_S
    except OSError:
        return False


def collect_garbage(
    root: Path, max_entries: int = MAX_CACHE_ENTRIES, max_bytes: int = MAX_CACHE_BYTES
) -> list[str]:
    """Remove leftovers of crashed builds, then least recently used entries past the
    bounds (never one used within the last day).  Returns the removed names."""
    removed: list[str] = []
    now = time.time()
    entries = []
    try:
        children = list(root.iterdir())
    except OSError:
        return removed
    for child in children:
        if child.name.startswith("tmp-"):
            if child.name.startswith("tmp-dead-") or _tmp_is_stale(child, now):
                remove_tree(child)
                removed.append(child.name)
            continue
        try:
            meta_path = child / "meta.json"
            used = meta_path.stat().st_mtime
            size = int(json.loads(meta_path.read_text(encoding="utf-8")).get("bytes", 0))
        except (OSError, ValueError, AttributeError):
            continue
        entries.append((used, size, child))
    entries.sort()
    total = sum(size for _, size, _ in entries)
    count = len(entries)
    for used, size, child in entries:
        if count <= max_entries and total <= max_bytes:
            break
        if now - used < KEEP_RECENT_S:
            break
        _discard(root, child)
        removed.append(child.name)
        count -= 1
        total -= size
    return removed


def _built_spec(spec: BotSpec, entry: Path) -> BotSpec:
    return BotSpec(folder=entry / "bot", manifest=spec.manifest)


def build_bot(
    spec: BotSpec,
    level: Level = DEFAULT_LEVEL,
    timeout_s: float | None = None,
    *,
    limits: BuildLimits | None = None,
    cache: Path | None = None,
    toolchains: tuple[str, ...] = (),
    identity: str | None = None,
) -> Built:
    """Stage ``spec``'s folder, build it sandboxed (or take it from the cache) and return
    the read-only built copy to launch.  Raises :class:`BuildError` with a message for
    the user (rejected folder, failed build and its output, the limit it hit).

    ``identity`` names "the same bot" across edits, whose compiler cache a build reuses:
    by default the resolved source folder; the server passes its author's bot."""
    host = limits or BuildLimits()
    if timeout_s is not None:
        host = BuildLimits(timeout_s, host.area_bytes, host.memory_bytes, host.max_processes)
    bot_limits = limits_for(spec, host)
    command = spec.manifest.build
    root = _open_cache(cache or default_cache_root())
    work = root / f"tmp-{os.getpid()}-{secrets.token_hex(6)}"
    try:
        work.mkdir(mode=0o700)
    except OSError as exc:
        raise BuildError(f"cannot use the build cache {root}: {exc.strerror}") from None
    try:
        source = work / "src"
        try:
            copy_checked(spec.folder, source, bot_limits.tree())
        except StagingError as exc:
            raise BuildError(f"{spec.name}: bot folder {spec.folder} refused: {exc}") from None
        # The declared toolchains are part of what a build used (none: the same key as before).
        parts = [CACHE_FORMAT, tree_digest(source), command or "", *toolchains]
        compiler = compiler_cache_for(spec, root, identity) if command else None
        if compiler is not None:
            # A build with a compiler cache is only as trustworthy as that bot's own cache:
            # never hand it to another bot with the same source.
            parts.append("compiler-cache\0" + compiler.identity)
        key_text = "\0".join(parts)
        key = hashlib.sha256(key_text.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        entry = root / key
        if entry.exists():
            meta = _valid_entry(entry)
            if meta is not None:
                _touch(entry)
                return Built(
                    _built_spec(spec, entry), 0.0, False, str(meta["version"]), spec.folder
                )
            _discard(root, entry)  # damaged: never reused
        seconds, ran = 0.0, False
        out = work / "bot"
        if command:
            try:
                result = build(
                    command,
                    source,
                    out,
                    bot_limits,
                    level=level,
                    ro_paths=toolchains,
                    compiler_cache=compiler.for_build(work) if compiler else None,
                )
            except SandboxError as exc:
                raise BuildError(f"{spec.name}: cannot run the build: {exc}") from None
            if compiler is not None:
                compiler.after_build(work, result.cache_saved, result.limit)
            if not result.ok:
                raise BuildError(_failure(spec, command, result))
            seconds, ran = result.seconds, True
            remove_tree(source)
        else:
            source.rename(out)
        make_read_only(out)
        digest = tree_digest(out)
        meta = {
            "format": CACHE_FORMAT,
            "digest": digest,
            "version": digest[:VERSION_LENGTH],
            "command": command,
            "bytes": _size(out),
            "build_seconds": round(seconds, 3),
            "created": time.time(),
        }
        (work / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        work.chmod(0o755)
        try:
            work.rename(entry)  # atomic publication
        except OSError:
            # Another arena process published the same key first: use theirs if intact.
            theirs = _valid_entry(entry)
            if theirs is None:
                raise BuildError(f"cannot publish the build of {spec.name} in {root}") from None
            return Built(
                _built_spec(spec, entry), seconds, ran, str(theirs["version"]), spec.folder
            )
        collect_garbage(root)
        return Built(_built_spec(spec, entry), seconds, ran, str(meta["version"]), spec.folder)
    except OSError as exc:
        raise BuildError(f"cannot stage {spec.name} in {root}: {exc.strerror or exc}") from None
    finally:
        remove_tree(work)  # after a publication the name is gone: nothing to remove


@dataclass(frozen=True)
class BotCompilerCache:
    """Where one bot's compiler cache lives and how big it may grow.

    ``folder`` is ``<build cache>/compiler/<sha256 of the identity>``, root-only (0700):
    no bot ever sees it.  It holds one archive that only this bot's builds unpack, each
    inside its own sandbox, so what a build leaves there (even a poisoned cache) can only
    reach the same bot's later builds."""

    identity: str
    folder: Path
    cap_bytes: int
    total_bytes: int

    @property
    def archive(self) -> Path:
        return self.folder / COMPILER_ARCHIVE

    def for_build(self, work: Path) -> CompilerCache:
        """The sandbox's view for one build whose private folder is ``work``.

        A cache past half its cap is dropped first (the whole cache: the other half is
        the room this build has to grow it)."""
        saved: Path | None = self.archive
        try:
            size = self.archive.stat().st_size
            if size > self.cap_bytes // 2:
                self.archive.unlink(missing_ok=True)
                saved = None
        except OSError:
            saved = None
        return CompilerCache(saved=saved, new=work / "compiler-cache.tar", cap_bytes=self.cap_bytes)

    def after_build(self, work: Path, saved: bool, limit: str | None) -> None:
        """Keep what an ok build left (atomic rename); drop a cache that filled up."""
        new = work / "compiler-cache.tar"
        try:
            if saved and new.is_file():
                self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                (self.folder / "identity").write_text(self.identity + "\n", encoding="utf-8")
                new.rename(self.archive)
            elif limit and limit.startswith("compiler cache"):
                self.archive.unlink(missing_ok=True)
        except OSError:
            return  # a cache is an optimisation: the next build is cold, nothing worse
        finally:
            new.unlink(missing_ok=True)
        collect_compiler_caches(self.folder.parent, self.total_bytes, keep=self.folder)


def _mib_setting(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
        if value < 0:
            raise ValueError
    except ValueError:
        # The organiser's setting, not the bot's fault: never a BuildError (a rejection).
        raise ArenaError(f"{name}={text!r} is not a size in MiB (0 turns it off)") from None
    return value


def compiler_cache_for(
    spec: BotSpec, root: Path, identity: str | None = None
) -> BotCompilerCache | None:
    """``spec``'s compiler cache in the build cache ``root``, or None when turned off
    (``ARENA_COMPILER_CACHE_MB=0``).  Two bots share one only if they are the same bot:
    the same ``identity``, by default the same resolved source folder."""
    cap = _mib_setting(COMPILER_CAP_ENV, DEFAULT_COMPILER_CAP_MB) * MIB
    total = _mib_setting(COMPILER_TOTAL_ENV, DEFAULT_COMPILER_TOTAL_MB) * MIB
    if cap == 0 or total == 0:
        return None
    who = identity or f"folder:{spec.folder.resolve()}"
    name = hashlib.sha256(f"azul-arena-compiler/1\0{who}".encode("utf-8", "surrogateescape"))
    folder = root / COMPILER_FOLDER / name.hexdigest()[:32]
    return BotCompilerCache(who, folder, min(cap, total), total)


def collect_compiler_caches(folder: Path, total_bytes: int, keep: Path | None = None) -> list[str]:
    """Remove the least recently saved compiler caches until the rest fit in
    ``total_bytes`` (never ``keep``, the one just saved).  Returns their folder names."""
    caches = []
    try:
        children = list(folder.iterdir())
    except OSError:
        return []
    for child in children:
        with contextlib.suppress(OSError):
            st = (child / COMPILER_ARCHIVE).stat()
            caches.append((st.st_mtime, st.st_size, child))
    caches.sort()
    total = sum(size for _, size, _ in caches)
    removed = []
    for _, size, child in caches:
        if total <= total_bytes:
            break
        if child == keep:
            continue
        remove_tree(child)
        removed.append(child.name)
        total -= size
    return removed


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _failure(spec: BotSpec, command: str, result: object) -> str:
    from arena.sandbox import BuildResult

    assert isinstance(result, BuildResult)
    if result.rejected:
        why = f"its result was refused: {result.rejected}"
    elif result.limit:
        why = f"it exceeded its {result.limit}"
    else:
        why = f"exit status {result.returncode}"
    tail = result.output.strip()[-2000:]
    return f"building {spec.name} failed ({command!r}): {why}\n{tail}"


def describe_cache(root: Path | None = None) -> str:
    """One line for `arena doctor`: where built bots are cached and how much is there."""
    root = root or default_cache_root()
    try:
        entries = [
            p for p in root.iterdir() if not p.name.startswith(("tmp-", ".", COMPILER_FOLDER))
        ]
    except FileNotFoundError:
        return f"build cache {root}: empty (created on first build; {CACHE_ENV} moves it)"
    except OSError as exc:
        return f"build cache {root}: not usable ({exc.strerror}); set {CACHE_ENV}"
    size = 0
    for entry in entries:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
            size += int(meta.get("bytes", 0))
    compilers = 0
    compiler_bytes = 0
    with contextlib.suppress(OSError):
        for folder in (root / COMPILER_FOLDER).iterdir():
            with contextlib.suppress(OSError):
                compiler_bytes += (folder / COMPILER_ARCHIVE).stat().st_size
                compilers += 1
    return (
        f"build cache {root}: {len(entries)} built bots, {size / MIB:.1f} MiB "
        f"(kept up to {MAX_CACHE_ENTRIES} / {MAX_CACHE_BYTES // MIB} MiB; {CACHE_ENV} moves it); "
        f"compiler caches of {compilers} bot{'' if compilers == 1 else 's'}, "
        f"{compiler_bytes / MIB:.1f} MiB in "
        f"{COMPILER_FOLDER}/ (delete it to clear them)"
    )
