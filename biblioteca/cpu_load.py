"""How many cores this process may use, and how many of them nobody is running on right now.

The local embedder asks before each call: with a core to spare, a question's vector takes half the time on two
threads; on a busy machine a second thread only waits for a core that another request (or PostgreSQL) holds.
"""

from __future__ import annotations

import math
import os

LOADAVG = "/proc/loadavg"
# cgroup v2's "quota period" (or "max period"), then cgroup v1's two files.
CPU_MAX = "/sys/fs/cgroup/cpu.max"
CFS_QUOTA, CFS_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def usable_cores() -> int:
    """Cores this process may use: its CPU affinity (which taskset and cpusets narrow), capped by its container's
    CPU quota (a 2-CPU limit on a 64-core host is 2)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cores, quota)) if quota else cores


def cpu_quota(
    *, cpu_max: str = CPU_MAX, cfs_quota: str = CFS_QUOTA, cfs_period: str = CFS_PERIOD
) -> int | None:
    """The container's CPU limit in whole cores (rounded up), or None when there is none or it cannot be read."""
    try:
        with open(cpu_max, encoding="ascii") as file:
            quota, _, period = file.read().partition(" ")
    except OSError:
        try:
            with open(cfs_quota, encoding="ascii") as q, open(cfs_period, encoding="ascii") as p:
                quota, period = q.read(), p.read()
        except OSError:
            return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return math.ceil(quota_us / period_us)


def runnable_tasks(loadavg: str) -> int | None:
    """The kernel's count of tasks running or ready to run, from /proc/loadavg's fourth field ("3/412")."""
    try:
        return int(loadavg.split()[3].split("/")[0])
    except (IndexError, ValueError):
        return None


def spare_cores(*, usable: int | None = None, path: str = LOADAVG) -> int:
    """Usable cores beyond the one the caller runs on that no other task wants this instant; 0 where the kernel
    does not say (not Linux), so the caller falls back to one thread. A caller asking often passes `usable`
    (`usable_cores()`, read once): reading the quota files is most of what this call costs."""
    try:
        with open(path, encoding="ascii") as file:
            running = runnable_tasks(file.read())
    except OSError:
        return 0
    if running is None:
        return 0
    return max(0, (usable_cores() if usable is None else usable) - max(running, 1))
