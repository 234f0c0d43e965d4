"""Reading how busy the machine is, for the local embedder's thread count."""

from __future__ import annotations

from biblioteca.cpu_load import runnable_tasks, spare_cores, usable_cores


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


def test_spare_cores_is_none_where_the_kernel_does_not_say(tmp_path):
    assert spare_cores(path=str(tmp_path / "missing")) == 0
    unreadable = tmp_path / "loadavg"
    unreadable.write_text("nothing here")
    assert spare_cores(path=str(unreadable)) == 0
