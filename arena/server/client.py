"""``arena submit FOLDER --server URL --token T [--wait]``: send a bot to a competition.

The folder is packed into a reproducible .tar.gz (sorted, timestamps and owners
cleared, VCS folders and caches left out), after the same checks the server makes
(a valid bot.toml, no link leaving the folder, no special file), then POSTed to
``/api/submissions`` with the author's token.  ``--wait`` polls
``/api/submissions/{id}`` until the build and check-bot have a verdict.  Every HTTP
refusal the server can give is turned into one sentence that says what to do.

httpx is imported lazily (the ``server`` extra); tests pass an
``httpx.MockTransport`` or an ASGI transport as ``transport``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import stat
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from arena.errors import ArenaError
from arena.referee.manifest import ManifestError, load_bot
from arena.sandbox.stage import file_mode, link_stays_inside
from arena.textsafe import visible

if TYPE_CHECKING:
    import httpx

TOKEN_ENV = "ARENA_TOKEN"
SUBMISSIONS = "/api/submissions"
LEFT_OUT_DIRS = frozenset(
    {".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", "__pycache__", ".venv", ".tox"}
    | {".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", ".vscode", ".gradle"}
)
"""Version control, virtual environments, caches and editor settings: never part of a
bot, often large (a .venv's links would leave the folder)."""
LEFT_OUT_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
LEFT_OUT_SUFFIXES = (".pyc", ".pyo", ".swp", "~")
FINAL_STATUSES = frozenset({"active", "rejected", "retired", "disqualified"})
POLL_FIRST_S = 1.0
POLL_MAX_S = 5.0


class SubmitError(ArenaError):
    """A submission could not be made; the message says why and what to do."""


@dataclass(frozen=True)
class Packed:
    """A packed bot folder: the archive (a temporary file), its size and contents."""

    file: IO[bytes]
    size: int
    files: int
    left_out: tuple[str, ...]
    name: str


# ---------------------------------------------------------------- packing


def _walk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every entry to pack, sorted, links never followed."""
    stack = [""]
    while stack:
        rel = stack.pop()
        here = folder / rel if rel else folder
        try:
            names = sorted(os.listdir(here))
        except OSError as exc:
            raise SubmitError(f"cannot read {here}: {exc.strerror}") from None
        subdirs = []
        for name in names:
            path = f"{rel}/{name}" if rel else name
            st = os.lstat(folder / path)
            yield path, st
            if stat.S_ISDIR(st.st_mode):
                subdirs.append(path)
        stack.extend(reversed(subdirs))


def _left_out(name: str, is_dir: bool) -> bool:
    if is_dir:
        return name in LEFT_OUT_DIRS
    return name in LEFT_OUT_FILES or name.endswith(LEFT_OUT_SUFFIXES)


def pack_folder(folder: Path) -> Packed:
    """The bot folder as a reproducible .tar.gz under one top-level folder named after
    the bot.  Raises :class:`SubmitError` for what the server would refuse."""
    try:
        spec = load_bot(folder)
    except ManifestError as exc:
        raise SubmitError(str(exc)) from None
    top = spec.name
    left_out: list[str] = []
    skipped: set[str] = set()
    out = tempfile.TemporaryFile()  # noqa: SIM115 (returned open, inside Packed)
    count = 0
    try:
        with (
            gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf,
        ):
            tf.addfile(_info(top, tarfile.DIRTYPE, 0o755))
            for rel, st in _walk(folder):
                if any(rel.startswith(s + "/") for s in skipped):
                    continue
                name = rel.rsplit("/", 1)[-1]
                if _left_out(name, stat.S_ISDIR(st.st_mode)):
                    left_out.append(rel)
                    skipped.add(rel)
                    continue
                _check_name(rel)
                arcname = f"{top}/{rel}"
                mode = st.st_mode
                if stat.S_ISDIR(mode):
                    tf.addfile(_info(arcname, tarfile.DIRTYPE, 0o755))
                elif stat.S_ISLNK(mode):
                    target = os.readlink(folder / rel)
                    if not link_stays_inside(rel, target):
                        raise SubmitError(
                            f"{folder / rel} is a symlink that leaves the folder ({target!r}); "
                            "the server refuses it: copy what it points to instead"
                        )
                    info = _info(arcname, tarfile.SYMTYPE, 0o777)
                    info.linkname = target
                    tf.addfile(info)
                elif stat.S_ISREG(mode):
                    info = _info(arcname, tarfile.REGTYPE, file_mode(mode))
                    info.size = st.st_size
                    with open(folder / rel, "rb") as handle:
                        tf.addfile(info, handle)
                else:
                    raise SubmitError(
                        f"{folder / rel} is not a regular file, folder or symlink; "
                        "the server refuses it"
                    )
                count += 1
        size = out.tell()
        out.seek(0)
    except OSError as exc:
        out.close()
        raise SubmitError(f"cannot pack {folder}: {exc.strerror or exc}") from None
    except BaseException:
        out.close()
        raise
    return Packed(out, size, count, tuple(left_out), top)


def _check_name(rel: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeError:
        raise SubmitError(f"{rel!r}: a file name that is not UTF-8; rename it") from None
    if "\\" in rel or any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel):
        raise SubmitError(f"{visible(rel)!r}: a file name with a backslash or control character")


def _info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


# ---------------------------------------------------------------- HTTP


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("error", "detail"):
            if isinstance(body.get(key), str):
                return visible(str(body[key]))
    text = response.text.strip()
    return visible(text[:200]) if text else response.reason_phrase


def explain(response: httpx.Response, *, size: int | None = None) -> SubmitError:
    """One sentence for a refusal, by status code."""
    code = response.status_code
    why = _error_text(response)
    if code == 401:
        return SubmitError(
            f"the server does not accept this token (401: {why}); use the token the "
            f"organiser gave you (--token or ${TOKEN_ENV})"
        )
    if code == 403:
        return SubmitError(f"not allowed (403): {why}")
    if code == 404:
        return SubmitError(
            f"not found (404) at {response.request.url}: {why}. Is this an Azul Arena "
            "server (arena serve)?"
        )
    if code == 409:
        return SubmitError(
            f"conflict (409): {why}. A bot name belongs to the first author who submits it: "
            "rename your bot (name in bot.toml)"
        )
    if code == 413:
        what = f" ({size / (1 << 20):.1f} MiB)" if size is not None else ""
        return SubmitError(
            f"the archive{what} is larger than this server accepts (413: {why}); leave out "
            "build outputs and data the build can generate"
        )
    if code == 429:
        retry = response.headers.get("retry-after")
        when = f"; retry after {retry} s" if retry else "; retry later"
        return SubmitError(f"too many requests (429): {why}{when}")
    if code >= 500:
        return SubmitError(f"the server failed ({code}): {why}; try again or tell the organiser")
    return SubmitError(f"the server refused the request ({code}): {why}")


def _client(server: str, token: str, transport: httpx.BaseTransport | None) -> httpx.Client:
    import httpx

    if not server.startswith(("http://", "https://")):
        raise SubmitError(f"--server {server!r}: give a URL such as http://127.0.0.1:8000")
    return httpx.Client(
        base_url=server.rstrip("/"),
        headers={"Authorization": f"Bearer {token}", "User-Agent": "arena-submit"},
        timeout=httpx.Timeout(30.0, write=300.0),
        transport=transport,
        follow_redirects=False,
    )


def _request(client: httpx.Client, send: Callable[[], httpx.Response]) -> httpx.Response:
    import httpx

    try:
        return send()
    except httpx.ConnectError as exc:
        raise SubmitError(
            f"cannot connect to {client.base_url} ({exc}); is `arena serve` running there, "
            "and is the address right?"
        ) from None
    except httpx.TimeoutException:
        raise SubmitError(f"{client.base_url} did not answer in time; try again") from None
    except httpx.HTTPError as exc:
        raise SubmitError(f"talking to {client.base_url} failed: {exc}") from None


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise SubmitError(
            f"{response.request.url} answered {response.status_code} without a JSON object: "
            "is this an Azul Arena server?"
        )
    return body


def submit(
    folder: Path, server: str, token: str, *, transport: httpx.BaseTransport | None = None
) -> dict[str, Any]:
    """Pack and upload ``folder``; the server's answer (``submission``, ``bot``,
    ``version``, ``status``)."""
    with _client(server, token, transport) as client:  # a bad URL is refused before packing
        packed = pack_folder(folder)
        with packed.file:
            files = {"archive": (f"{packed.name}.tar.gz", packed.file, "application/gzip")}
            response = _request(client, lambda: client.post(SUBMISSIONS, files=files))
        if response.status_code not in (200, 201, 202):
            raise explain(response, size=packed.size)
        answer = _json(response)
    answer.setdefault("packed_bytes", packed.size)
    answer.setdefault("packed_files", packed.files)
    answer["left_out"] = list(packed.left_out)
    return answer


def wait_for_verdict(
    submission: object,
    server: str,
    token: str,
    *,
    timeout_s: float = 900.0,
    transport: httpx.BaseTransport | None = None,
    on_status: Callable[[str], None] = lambda status: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Poll the submission until its status is final; its last state."""
    deadline = clock() + timeout_s
    delay = POLL_FIRST_S
    last = None
    with _client(server, token, transport) as client:
        while True:
            response = _request(client, lambda: client.get(f"{SUBMISSIONS}/{submission}"))
            if response.status_code == 429:
                retry = response.headers.get("retry-after", "")
                sleep(float(retry) if retry.isdigit() else POLL_MAX_S)
                continue
            if response.status_code != 200:
                raise explain(response)
            state = _json(response)
            status = str(state.get("status", "unknown"))
            if status != last:
                on_status(status)
                last = status
            if status in FINAL_STATUSES:
                return state
            if clock() + delay > deadline:
                raise SubmitError(
                    f"no verdict after {timeout_s:g} s (status {status}); the server may be "
                    f"busy: look again with arena submit --status {submission}"
                )
            sleep(delay)
            delay = min(POLL_MAX_S, delay * 1.5)


# ---------------------------------------------------------------- the command


def _print(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_submit(args: argparse.Namespace) -> int:
    """`arena submit`: exit 0 when accepted (or queued without --wait), 1 when rejected."""
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise SubmitError(
            "arena submit needs the server extra: pip install 'azul-arena[server]'"
        ) from None
    token = args.token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise SubmitError(f"no token: pass --token T or set ${TOKEN_ENV}")
    transport = getattr(args, "transport", None)
    if args.status is not None:
        if args.wait:
            state = wait_for_verdict(
                args.status, args.server, token, timeout_s=args.timeout, transport=transport
            )
        else:
            state = _status_once(args.status, args.server, token, transport)
        return _print_state(state)
    if not args.folder:
        raise SubmitError("give the bot FOLDER to submit (or --status ID)")
    answer = submit(Path(args.folder), args.server, token, transport=transport)
    left = answer.get("left_out") or []
    _print(
        f"packed {answer.get('packed_files')} files ({_size(int(answer['packed_bytes']))})"
        + (f", left out: {', '.join(map(visible, left))}" if left else "")
    )
    submission = answer.get("submission")
    if answer.get("kept"):
        _print(
            f"{visible(str(answer.get('bot')))}: identical to version {answer.get('version')}: "
            "kept (its rating and games stay)"
        )
        return 0
    _print(
        f"submitted {visible(str(answer.get('bot')))} version {answer.get('version')} "
        f"as submission {submission}: {answer.get('status')}"
    )
    if not args.wait:
        _print(f"Next: arena submit --status {submission} --server {args.server} --wait")
        return 0
    state = wait_for_verdict(
        submission,
        args.server,
        token,
        timeout_s=args.timeout,
        transport=transport,
        on_status=lambda s: _print(f"  status: {visible(s)}"),
    )
    return _print_state(state)


def _status_once(
    submission: object, server: str, token: str, transport: httpx.BaseTransport | None
) -> dict[str, Any]:
    with _client(server, token, transport) as client:
        response = _request(client, lambda: client.get(f"{SUBMISSIONS}/{submission}"))
        if response.status_code != 200:
            raise explain(response)
        return _json(response)


def _print_state(state: dict[str, Any]) -> int:
    status = str(state.get("status"))
    verdict = state.get("verdict")
    _print(f"status: {visible(status)}" + (f" — {visible(str(verdict))}" if verdict else ""))
    log = state.get("log") or state.get("build_log")
    if status == "rejected" and isinstance(log, str) and log.strip():
        _print("log:")
        for line in visible(log.rstrip(), multiline=True).split("\n")[-60:]:
            _print(f"  {line}")
    return 1 if status in ("rejected", "disqualified") else 0


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `arena submit` (the parser entry lives in arena/commands/submit.py)."""
    p.add_argument("folder", metavar="FOLDER", nargs="?", help="bot folder (with bot.toml)")
    p.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000")
    p.add_argument(
        "--token",
        metavar="T",
        help=f"your author token (default: ${TOKEN_ENV}; keeps it out of your shell history)",
    )
    p.add_argument("--wait", action="store_true", help="wait for the build and check-bot verdict")
    p.add_argument(
        "--timeout", type=float, default=900.0, help="seconds --wait waits (default 900)"
    )
    p.add_argument(
        "--status", metavar="ID", help="show submission ID's status instead of submitting"
    )
