"""How many cores this process may use, and how many of them nobody is running on right now.

The local embedder asks before each call: with a core to spare, a question's vector takes half the time on two
threads; on a busy machine a second thread only waits for a core that another request (or PostgreSQL) holds.
"""

from __future__ import annotations

import os

LOADAVG = "/proc/loadavg"


def usable_cores() -> int:
    """Cores this process may be scheduled on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def runnable_tasks(loadavg: str) -> int | None:
    """The kernel's count of tasks running or ready to run, from /proc/loadavg's fourth field ("3/412")."""
    try:
        return int(loadavg.split()[3].split("/")[0])
    except (IndexError, ValueError):
        return None


def spare_cores(*, path: str = LOADAVG) -> int:
    """Usable cores beyond the one the caller runs on that no other task wants this instant; 0 where the kernel
    does not say (not Linux), so the caller falls back to one thread."""
    try:
        with open(path, encoding="ascii") as file:
            running = runnable_tasks(file.read())
    except OSError:
        return 0
    if running is None:
        return 0
    return max(0, usable_cores() - max(running, 1))
