"""The bot's seccomp filter: system calls that would give it state outliving the sandbox.

The kernel keyrings are per uid, not per namespace: a key added by a bot survives the
bot, the game and the tournament, a later bot under the same uid reads it, and a key
with permissive permissions shows in every other uid's ``/proc/keys`` (a covert channel
between competitors).  So ``add_key``, ``keyctl`` and ``request_key`` fail with EPERM.
Every other per-uid or host-wide state a bot could reach is closed by the namespaces
(SysV IPC and POSIX message queues: ipc; abstract sockets: net; /dev/shm and /tmp:
private mounts) or dies with the bot's processes (inotify, memfds, pipes, locks).

The filter is compiled with libseccomp (through ``pyseccomp``, a ctypes binding with the
API of libseccomp's own Python module) and handed to bubblewrap (``--seccomp FD``).
System calls of another architecture (e.g. the i386 ABI on x86-64) kill the process:
a filter on the native numbers would not see them.
"""

from __future__ import annotations

import errno
import functools
import tempfile

DENIED = ("add_key", "keyctl", "request_key")


class SeccompUnavailable(RuntimeError):
    """libseccomp or its binding is missing; the message says which."""


@functools.cache
def bot_filter() -> bytes:
    """The compiled BPF program (raises SeccompUnavailable)."""
    try:
        import pyseccomp
    except ImportError as exc:
        raise SeccompUnavailable(f"the pyseccomp module is missing ({exc})") from None
    except OSError as exc:  # libseccomp.so.2 itself is missing
        raise SeccompUnavailable(f"libseccomp is missing ({exc})") from None
    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        for name in DENIED:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        with tempfile.TemporaryFile() as sink:  # export_bpf needs a real file descriptor
            rules.export_bpf(sink)
            sink.seek(0)
            program = sink.read()
    except Exception as exc:  # anything libseccomp refuses
        raise SeccompUnavailable(f"libseccomp cannot build the filter ({exc})") from None
    if not program or len(program) % 8:
        raise SeccompUnavailable("libseccomp produced no BPF program")
    return program
