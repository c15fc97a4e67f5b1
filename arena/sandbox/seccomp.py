"""The bot's seccomp filter: a default-deny allowlist of the system calls runtimes need.

Every system call not in :data:`ALLOWED` fails with EPERM, as in the default profile of
container runtimes.  The list covers what the bundled kits' runtimes and builds use
(Python, Node, the JVM, Go, Rust, C/C++, ``sh``, ``make``, ``gcc``, ``cargo``, ``go
build``, ``javac``, ``tsc``) and nothing that reaches kernel state beyond the sandbox:

- :data:`DENIED` names what a bot must never get (io_uring, which bypasses system call
  filtering and auditing; bpf; perf_event_open; userfaultfd; mounts and namespaces;
  kexec; ptrace and the cross-process memory calls; the kernel keyrings, which are per
  uid and outlive the sandbox; modules; reboot; swap; the clock...).  It is disjoint
  from ALLOWED; the tests check both.
- ``clone`` is allowed only without namespace flags; ``clone3`` (whose flags a filter
  cannot read) fails with ENOSYS, so glibc and the runtimes fall back to ``clone``.
- **Advisory locks are inert.**  A lock lives on the inode, and every sandbox reads the
  same inodes (``/usr``, ``/etc``, ``/dev/null``, two copies of one bot): a lock taken
  in one sandbox is seen in another, a covert channel between concurrent bots.
  Private copies of everything readable are not practical, and a filter sees only a file
  descriptor, not which file it names, so ``flock`` and the ``fcntl`` lock commands
  (POSIX and OFD) succeed *without locking* everywhere; a query (``F_GETLK``) fails with
  ENOLCK, and leases and dnotify with EPERM.  Inside one sandbox locks therefore exclude nothing: a
  bot's own processes still have pipes to coordinate, and a build is one writer.
- **No watching shared files**: inotify and fanotify would report another sandbox's
  reads of ``/usr`` (EPERM).  Page-cache eviction of shared files (``fadvise``,
  ``readahead``, ``madvise`` COLD/PAGEOUT) succeeds without effect.

The filter is compiled with libseccomp (through ``pyseccomp``, a ctypes binding with the
API of libseccomp's own Python module) and handed to bubblewrap (``--seccomp FD``).
System calls of another architecture (e.g. the i386 ABI on x86-64) kill the process:
a filter on the native numbers would not see them.
"""

from __future__ import annotations

import errno
import functools
import tempfile
from dataclasses import dataclass
from typing import Any


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


ALLOWED = _names(
    """
    read write readv writev pread64 pwrite64 preadv pwritev preadv2 pwritev2
    open openat openat2 creat close close_range lseek dup dup2 dup3 pipe pipe2
    stat fstat lstat newfstatat statx statfs fstatfs access faccessat faccessat2
    readlink readlinkat getdents getdents64 getcwd chdir fchdir
    mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat
    symlink symlinkat chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat umask
    truncate ftruncate fallocate fsync fdatasync sync syncfs sync_file_range
    utime utimes utimensat futimesat sendfile copy_file_range splice tee vmsplice
    mknod mknodat ioctl
    getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr
    setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr
    brk mmap mprotect munmap mremap mincore msync mlock mlock2 munlock mlockall
    munlockall membarrier memfd_create get_mempolicy
    fork vfork execve execveat exit exit_group wait4 waitid
    kill tkill tgkill pidfd_open pidfd_send_signal
    rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait
    rt_sigsuspend rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack
    getpid getppid gettid getpgid setpgid getpgrp getsid setsid
    getuid geteuid getgid getegid getresuid getresgid getgroups
    setuid setgid setreuid setregid setresuid setresgid setgroups setfsuid setfsgid
    capget capset prctl arch_prctl seccomp
    set_tid_address set_robust_list get_robust_list rseq futex futex_waitv
    sched_yield sched_getaffinity sched_setaffinity sched_getparam sched_setparam
    sched_getscheduler sched_setscheduler sched_get_priority_max sched_get_priority_min
    sched_getattr sched_setattr sched_rr_get_interval getpriority setpriority
    ioprio_get getrlimit setrlimit prlimit64 getrusage times uname sysinfo getcpu getrandom
    alarm pause nanosleep clock_nanosleep clock_gettime clock_getres gettimeofday time
    getitimer setitimer timer_create timer_settime timer_gettime timer_getoverrun
    timer_delete timerfd_create timerfd_settime timerfd_gettime restart_syscall
    epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2
    poll ppoll select pselect6 eventfd eventfd2 signalfd signalfd4
    socketpair bind listen accept accept4 connect getsockname getpeername
    sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg setsockopt getsockopt shutdown
    shmget shmat shmdt shmctl msgget msgsnd msgrcv msgctl semget semop semtimedop semctl
    mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
    """
)
"""Allowed without conditions (names; those this architecture lacks are skipped).  SysV
and POSIX IPC live in the sandbox's own ipc namespace."""

CONDITIONAL = ("clone", "socket", "personality", "fcntl", "flock", "madvise")
"""Allowed only in part (see :func:`bot_filter`)."""

INERT = ("fadvise64", "readahead")
"""Advice about the shared page cache: succeeds without effect."""

DENIED = _names(
    """
    io_uring_setup io_uring_enter io_uring_register bpf perf_event_open userfaultfd
    mount umount umount2 pivot_root chroot move_mount open_tree fsopen fsconfig fsmount
    fspick mount_setattr unshare setns kexec_load kexec_file_load
    ptrace process_vm_readv process_vm_writev process_madvise pidfd_getfd kcmp
    add_key keyctl request_key init_module finit_module delete_module
    reboot swapon swapoff acct settimeofday clock_settime clock_adjtime adjtimex
    sethostname setdomainname syslog iopl ioperm quotactl quotactl_fd lookup_dcookie
    name_to_handle_at open_by_handle_at fanotify_init fanotify_mark
    inotify_init inotify_init1 inotify_add_watch inotify_rm_watch
    vhangup uselib modify_ldt memfd_secret cachestat mbind set_mempolicy migrate_pages
    move_pages io_setup io_submit io_cancel io_destroy io_getevents remap_file_pages
    """
)
"""Never allowed (EPERM like everything unlisted; named so the tests and the docs can
check them).  ``clone3`` is refused with ENOSYS instead (see the module docstring)."""

ENOSYS_CALLS = ("clone3",)

CLONE_NAMESPACES = 0x7E020000
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET."""
SOCKET_DOMAINS = (1, 2, 10, 16)
"""AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (interfaces and routes of the empty net
namespace, read by Go's and glibc's resolvers)."""
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
"""Linux, Linux32, UNAME26 and the query: what the runtimes ask (as in Docker's profile)."""
F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
FCNTL_ALLOWED = (0, 1, 2, 3, 4, 8, 9, 10, 11, 15, 16, 17, 1025, 1027)
FCNTL_ALLOWED_MORE = (1030, 1031, 1032, 1033, 1034, 1035, 1036, 1037, 1038)
"""fcntl commands allowed: dup, fd and status flags, owner and signal, lease query, pipe
size, seals, write hints.  Not F_SETLEASE (1024) nor F_NOTIFY (1026, dnotify: it reports
accesses to a shared folder like inotify)."""
MADV_COLD, MADV_PAGEOUT = 20, 21
MADVISE_ALLOWED = (0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 22, 23, 24, 25)
"""Every advice but COLD and PAGEOUT (which evict shared page cache) and HWPOISON.  The
conditions compare exact values: a filter sees 64 bits where the kernel reads an int, so
a range check could be passed with high bits set."""


class SeccompUnavailable(RuntimeError):
    """libseccomp or its binding is missing; the message says which."""


@dataclass(frozen=True)
class Profile:
    """The compiled filter and what it allows (for ``arena doctor``)."""

    program: bytes
    allowed: int
    """System calls allowed (fully or in part) on this architecture."""

    def describe(self) -> str:
        return (
            f"default-deny allowlist, {self.allowed} system calls (EPERM otherwise); "
            "io_uring, bpf, perf_event_open, userfaultfd, mount, ptrace, keyrings denied; "
            "locks inert; foreign ABIs killed"
        )


def _native_names(names: object) -> list[str]:
    import pyseccomp

    found = []
    for name in sorted(names):  # type: ignore[call-overload]
        if pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) >= 0:
            found.append(name)
    return found


def _rules() -> tuple[Any, int]:
    """The libseccomp filter (a ``pyseccomp.SyscallFilter``) and the allowed count."""
    import pyseccomp
    from pyseccomp import Arg

    rules = pyseccomp.SyscallFilter(pyseccomp.ERRNO(errno.EPERM))
    allowed = _native_names(ALLOWED)
    for name in allowed:
        rules.add_rule(pyseccomp.ALLOW, name)
    for name in _native_names(ENOSYS_CALLS):
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), name)
    for name in _native_names(INERT):
        rules.add_rule(pyseccomp.ERRNO(0), name)
    rules.add_rule(pyseccomp.ALLOW, "clone", Arg(0, pyseccomp.MASKED_EQ, CLONE_NAMESPACES, 0))
    for domain in SOCKET_DOMAINS:
        rules.add_rule(pyseccomp.ALLOW, "socket", Arg(0, pyseccomp.EQ, domain))
    for value in PERSONALITIES:
        rules.add_rule(pyseccomp.ALLOW, "personality", Arg(0, pyseccomp.EQ, value))
    for command in (*FCNTL_ALLOWED, *FCNTL_ALLOWED_MORE):
        rules.add_rule(pyseccomp.ALLOW, "fcntl", Arg(1, pyseccomp.EQ, command))
    for command in (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW):
        rules.add_rule(pyseccomp.ERRNO(0), "fcntl", Arg(1, pyseccomp.EQ, command))
    for command in (F_GETLK, F_OFD_GETLK):
        rules.add_rule(pyseccomp.ERRNO(errno.ENOLCK), "fcntl", Arg(1, pyseccomp.EQ, command))
    rules.add_rule(pyseccomp.ERRNO(0), "flock")
    for advice in MADVISE_ALLOWED:
        rules.add_rule(pyseccomp.ALLOW, "madvise", Arg(2, pyseccomp.EQ, advice))
    for advice in (MADV_COLD, MADV_PAGEOUT):
        rules.add_rule(pyseccomp.ERRNO(0), "madvise", Arg(2, pyseccomp.EQ, advice))
    return rules, len(allowed) + len(CONDITIONAL) + len(_native_names(INERT))


@functools.cache
def profile() -> Profile:
    """The compiled BPF program and its size (raises SeccompUnavailable)."""
    try:
        import pyseccomp  # noqa: F401
    except ImportError as exc:
        raise SeccompUnavailable(f"the pyseccomp module is missing ({exc})") from None
    except (OSError, RuntimeError) as exc:  # libseccomp.so.2 itself is missing
        raise SeccompUnavailable(f"libseccomp is missing ({exc})") from None
    try:
        rules, allowed = _rules()
        with tempfile.TemporaryFile() as sink:  # export_bpf needs a real file descriptor
            rules.export_bpf(sink)
            sink.seek(0)
            program = sink.read()
    except Exception as exc:  # anything libseccomp refuses
        raise SeccompUnavailable(f"libseccomp cannot build the filter ({exc})") from None
    if not program or len(program) % 8:
        raise SeccompUnavailable("libseccomp produced no BPF program")
    return Profile(program, allowed)


def bot_filter() -> bytes:
    """The compiled BPF program (raises SeccompUnavailable)."""
    return profile().program
