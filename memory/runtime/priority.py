"""CPU priority of background processes: the pipeline's workers yield to the request path.

Invariants: a priority is only ever lowered, never raised (no privilege is needed for
that); a process that leads its own session also lowers its autogroup's priority, any
other process only its own; a failure to lower is reported, never raised, since the
worker works the same at any priority. A process below normal priority also lowers the
PostgreSQL backend of each of its connections, only when that backend is on this machine
and verifiably serves that connection: a backend works for its client, and the database
would otherwise run the background's queries level with the API's.

Why the autogroup: on Linux with autogroup scheduling (`kernel.sched_autogroup_enabled`,
on by default in most kernels) the scheduler first shares the CPUs between sessions, and
a nice value only ranks a process against the processes of its own session. `muma up`,
the benchmarks and the tests start each service in a session of its own, so a worker's
nice value alone would leave it level with the API. Writing the nice value of a session
the worker did not start (a worker run from an interactive shell) would slow the whole
terminal, so only a session leader writes it.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import time
from pathlib import Path

AUTOGROUP = Path("/proc/self/autogroup")
# The kernel accepts one autogroup change per 100 ms machine-wide from an unprivileged
# process (EAGAIN before that).
AUTOGROUP_RETRY_SECONDS = 0.11


def lower_cpu_priority(nice: int, *, autogroup: Path = AUTOGROUP) -> list[str]:
    """Lower this process (and, as a session leader, its autogroup) to at least `nice`;
    returns what changed or failed, for the caller's log."""
    if nice <= 0 or not hasattr(os, "getpriority"):
        return []
    report: list[str] = []
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if current < nice:
        os.nice(nice - current)
        report.append(f"process nice {current} -> {nice}")
    if os.getsid(0) == os.getpid() and autogroup.is_file():
        report.append(_lower_autogroup(autogroup, nice))
    return report


def lower_backend_priority(backend_pid: int, client_fd: int) -> str | None:
    """Give the backend `backend_pid` serving the connection on socket `client_fd` this
    process's nice value if that is lower priority than the backend's; returns what
    changed or why not, None when this process runs at normal priority."""
    if not hasattr(os, "getpriority"):  # not a Unix: no nice values
        return None
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    if nice <= 0:
        return None
    if not _serves_connection(backend_pid, client_fd):
        return f"database backend {backend_pid} not verifiably this connection's: left alone"
    try:
        current = os.getpriority(os.PRIO_PROCESS, backend_pid)
        if current < nice:
            os.setpriority(os.PRIO_PROCESS, backend_pid, nice)
    except OSError as exc:
        return f"database backend {backend_pid} left alone: {exc}"
    return f"database backend {backend_pid} nice {current} -> {max(current, nice)}"


def _serves_connection(backend_pid: int, client_fd: int) -> bool:
    """Whether `backend_pid` is, in this machine's process table, the backend at the other
    end of `client_fd`. A server in another PID namespace (a container) reports its own
    numbering, which may name an unrelated process here.

    Unix socket: the listening postmaster (the socket's peer credentials) is the
    backend's parent. Loopback TCP: the backend's process title names this end's port,
    as PostgreSQL's titles do ("postgres: user db 127.0.0.1(54321) idle").
    """
    try:
        with socket.socket(fileno=os.dup(client_fd)) as sock:
            peer_credentials = getattr(socket, "SO_PEERCRED", None)  # Linux only
            if sock.family == socket.AF_UNIX and peer_credentials is not None:
                size = struct.calcsize("3i")
                credentials = sock.getsockopt(socket.SOL_SOCKET, peer_credentials, size)
                listener = struct.unpack("3i", credentials)[0]
                return listener > 0 and _parent_pid(backend_pid) == listener
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                if not ipaddress.ip_address(sock.getpeername()[0]).is_loopback:
                    return False
                title = Path(f"/proc/{backend_pid}/cmdline").read_bytes()
                return (
                    title.startswith(b"postgres") and f"({sock.getsockname()[1]})".encode() in title
                )
    except (OSError, ValueError):
        return False
    return False


def _parent_pid(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return None


def autogroup_nice(autogroup: Path = AUTOGROUP) -> int | None:
    """The autogroup's nice value ("/autogroup-42 nice 10"), or None when unreadable."""
    try:
        return int(autogroup.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def _lower_autogroup(autogroup: Path, nice: int) -> str:
    current = autogroup_nice(autogroup)
    if current is None:
        return f"autogroup nice unreadable at {autogroup}"
    if current >= nice:
        return f"autogroup nice already {current}"
    error: OSError | None = None
    for _ in range(3):
        try:
            autogroup.write_text(str(nice))
            return f"autogroup nice {current} -> {nice}"
        except OSError as exc:
            error = exc
            if exc.errno != errno.EAGAIN:
                break
            time.sleep(AUTOGROUP_RETRY_SECONDS)
    return f"autogroup nice left at {current}: {error}"
