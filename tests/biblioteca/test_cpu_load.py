"""Reading how busy the machine is, for the local embedder's thread count."""

from __future__ import annotations

from biblioteca.cpu_load import cpu_quota, runnable_tasks, spare_cores, usable_cores


def test_runnable_tasks_is_the_fourth_fields_numerator():
    assert runnable_tasks("0.52 0.88 1.37 3/83 12039\n") == 3


def test_runnable_tasks_is_unknown_for_text_of_another_shape():
    assert runnable_tasks("") is None
    assert runnable_tasks("0.52 0.88 1.37 many 12039") is None


def test_usable_cores_is_at_least_one():
    assert usable_cores() >= 1


def test_spare_cores_counts_the_usable_cores_beyond_the_running_tasks(tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.10 0.10 0.10 1/100 42\n")
    assert spare_cores(path=str(loadavg)) == usable_cores() - 1
    loadavg.write_text(f"4.00 4.00 4.00 {usable_cores() + 3}/100 42\n")
    assert spare_cores(path=str(loadavg)) == 0
    loadavg.write_text("2.00 2.00 2.00 3/100 42\n")
    assert spare_cores(usable=8, path=str(loadavg)) == 5  # the caller's own count of usable cores


def test_spare_cores_is_none_where_the_kernel_does_not_say(tmp_path):
    assert spare_cores(path=str(tmp_path / "missing")) == 0
    unreadable = tmp_path / "loadavg"
    unreadable.write_text("nothing here")
    assert spare_cores(path=str(unreadable)) == 0


def quota_files(tmp_path, *, cpu_max: str | None = None, v1: tuple[str, str] | None = None) -> dict[str, str]:
    paths = {name: str(tmp_path / name) for name in ("cpu.max", "quota", "period")}
    if cpu_max is not None:
        (tmp_path / "cpu.max").write_text(cpu_max)
    if v1 is not None:
        (tmp_path / "quota").write_text(v1[0])
        (tmp_path / "period").write_text(v1[1])
    return {"cpu_max": paths["cpu.max"], "cfs_quota": paths["quota"], "cfs_period": paths["period"]}


def test_cpu_quota_reads_cgroup_v2_in_whole_cores_rounded_up(tmp_path):
    assert cpu_quota(**quota_files(tmp_path, cpu_max="200000 100000\n")) == 2
    assert cpu_quota(**quota_files(tmp_path, cpu_max="150000 100000\n")) == 2


def test_cpu_quota_reads_cgroup_v1_when_v2_is_absent(tmp_path):
    assert cpu_quota(**quota_files(tmp_path, v1=("300000\n", "100000\n"))) == 3


def test_cpu_quota_is_none_without_a_limit_or_a_readable_file(tmp_path):
    assert cpu_quota(**quota_files(tmp_path, cpu_max="max 100000\n")) is None
    assert cpu_quota(**quota_files(tmp_path / "missing")) is None
    assert cpu_quota(**quota_files(tmp_path, v1=("-1\n", "100000\n"))) is None


def test_usable_cores_is_capped_by_the_containers_quota(monkeypatch):
    monkeypatch.setattr("biblioteca.cpu_load.cpu_quota", lambda: 1)
    assert usable_cores() == 1
