"""The environment probe's report, its diffs and the pinning plan, on captured and crafted reports (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import environment
from jobs.environment import pinning, probe

FIXTURES = Path(__file__).parent.parent / "fixtures" / "environment"


def captured(name: str) -> dict:
    return environment.parse_report((FIXTURES / name).read_text())


def test_a_captured_report_is_read_with_typed_numbers_and_odd_values_left_out() -> None:
    env = captured("nvme_odd.txt")
    assert env["kernel"] == "5.10.0-21-amd64" and env["cpus"] == 16 and env["mem_total_kb"] == 65536000
    assert env["complete"] is True
    device = env["device"]
    assert device["partition_of"] == "nvme1n1" and device["queue_name"] == "nvme1n1"
    assert device["size_bytes"] == 4294967296 * 512
    assert device["scheduler"] == "none" and device["nr_requests"] == 1023 and device["rq_affinity"] == 1
    # An Arabic-Indic digit is not a number benchweb reads; a queue not named by digits is not a queue.
    assert "read_ahead_kb" not in device
    assert device["queue_cpus"] == ["0-1", "2-3", "10, 11"]
    assert device["rq_affinity_writable"] is False
    # The forged-looking model is one value, and a line outside the report (after end=1) is not read.
    assert device["model"] == "Alibaba Cloud Elastic Block Storage  ?fs=forged"
    assert env["filesystem"] == {"raw": "forged"}


def test_the_run_page_lists_what_was_reported_and_names_a_partitions_parent() -> None:
    facts = dict(environment.facts(captured("nvme_odd.txt")))
    assert facts["device"] == "nvme1n1p1 (partition of nvme1n1)"
    assert facts["queue CPUs"] == "0-1 | 2-3 | 10, 11" and facts["CPUs"] == "16"
    assert "read_ahead_kb" not in facts and "instance type" not in facts


def test_a_report_without_its_end_is_incomplete_and_one_without_its_header_is_empty() -> None:
    text = (FIXTURES / "nvme_odd.txt").read_text()
    assert environment.parse_report(text.split("end=1")[0])["complete"] is False
    assert environment.parse_report(text.replace("benchweb_environment=1", "")) == {"complete": False}


@pytest.mark.parametrize(
    ("text", "chosen"),
    [("none [mq-deadline] kyber bfq", "mq-deadline"), ("[none] mq-deadline", "none"), ("none", "none"),
     ("none mq-deadline", None), ("[a] [b]", None), ("", None)],
)  # fmt: skip
def test_the_scheduler_is_the_one_in_brackets(text: str, chosen: str | None) -> None:
    assert probe.selected_scheduler(text) == chosen


def test_findmnt_escapes_blanks_so_a_mount_point_with_a_space_stays_one_value() -> None:
    report = "benchweb_environment=1\nfs=xfs /dev/sdb1 /mnt/my\\x20disk rw,noatime\nend=1\n"
    assert environment.parse_report(report)["filesystem"] == {
        "type": "xfs", "source": "/dev/sdb1", "mount": "/mnt/my disk", "options": "rw,noatime",
    }  # fmt: skip


def test_changes_read_as_lines_a_person_understands() -> None:
    old = {"kernel": "5.10.0-21", "device": {"rq_affinity": 1, "scheduler": "mq-deadline"},
           "filesystem": {"options": "rw,relatime"}}  # fmt: skip
    new = {"kernel": "6.1.0-13", "device": {"rq_affinity": 1, "rq_affinity_set": 2, "scheduler": "none"},
           "filesystem": {"options": "rw,noatime"}, "fio": "fio-3.33"}  # fmt: skip
    assert environment.environment_changes(old, new) == [
        "kernel 5.10.0-21 → 6.1.0-13",
        "fio (not reported) → fio-3.33",
        "mount options rw,relatime → rw,noatime",
        "scheduler mq-deadline → none",
        "rq_affinity 1 → 2",
    ]
    assert environment.environment_changes(old, old) == []
    assert environment.environment_changes(None, new) == []


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0, 1", {0, 1}), ("0-3,8-9", {0, 1, 2, 3, 8, 9}), ("5", {5}), ("3-1", None), ("0;1", None), ("", None)],
)
def test_kernel_cpu_lists_are_read_and_written_back_compactly(text: str, cpus: set[int] | None) -> None:
    assert pinning.cpu_set(text) == cpus
    if cpus:
        assert pinning.cpu_set(pinning.cpu_list(cpus)) == cpus


def test_the_pinning_plan_of_the_captured_host() -> None:
    env = captured("nvme_odd.txt")
    params = {"tool": "fio", "pin_queue_cpus": True, "jobs": 6}
    plan = pinning.plan(params, env, tunable=True, host_name="essd-1")
    assert plan.refusal == "" and plan.queue_cpus == "0-3,10-11" and plan.tunables == ()
    # Tunable, but the login user may not write it: the command to run, on the parent device's queue.
    assert plan.warnings == [
        "rq_affinity of nvme1n1 is 1, not 2 as the pinned recipe wants; benchweb left it alone (the login user "
        "may not write it). To set it, run as root on essd-1: echo 2 | sudo tee /sys/block/nvme1n1/queue/rq_affinity"
    ]
    refused = pinning.plan(params | {"jobs": 7}, env, tunable=True, host_name="essd-1").refusal
    assert "7 fio jobs" in refused and "those are 6 CPUs (0-3,10-11; the host has 16 online)" in refused
    assert pinning.plan(params | {"pin_queue_cpus": False}, env, tunable=True, host_name="x").queue_cpus == ""


def test_a_device_name_that_is_not_a_kernel_name_is_never_written_into_a_path() -> None:
    env = {"device": {"queue_name": "../../etc", "rq_affinity": 1, "rq_affinity_writable": True, "queue_cpus": ["0"]}}
    plan = pinning.plan({"pin_queue_cpus": True, "jobs": 1}, env, tunable=True, host_name="h")
    assert plan.tunables == () and plan.warnings == [
        "rq_affinity of ../../etc could not be read; the pinned recipe wants it at 2."
    ]


def test_the_wrapper_writes_a_block_queues_rq_affinity_and_nothing_else() -> None:
    from jobs import remote

    def wrapper(tunables: tuple[tuple[str, str], ...]) -> str:
        plan = remote.Plan(run_uuid="00000000-0000-4000-8000-000000000000", run_dir="/tmp/r", lock_path="/tmp/l",
                           argv=["fio", "job.fio"], limit_s=10, files={}, tunables=tunables)  # fmt: skip
        return remote.wrapper_script(plan)

    script = wrapper((("/sys/block/nvme1n1/queue/rq_affinity", "2"),))
    assert "echo 2 > /sys/block/nvme1n1/queue/rq_affinity 2>>tuning.log" in script
    assert script.index("rq_affinity") < script.index("fio job.fio")
    for path, value in [("/etc/passwd", "2"), ("/sys/block/a b/queue/rq_affinity", "2"),
                        ("/sys/block/sda/queue/rq_affinity", "2; reboot")]:  # fmt: skip
        with pytest.raises(remote.RemoteError):
            wrapper(((path, value),))


def test_a_failed_rq_affinity_write_replaces_the_warning_that_it_was_set() -> None:
    env = {"device": {"queue_name": "sdb", "rq_affinity": 1, "rq_affinity_writable": True, "queue_cpus": ["0-3"]}}
    plan = pinning.plan({"pin_queue_cpus": True, "jobs": 2}, env, tunable=True, host_name="h1")
    assert plan.tunables == (("/sys/block/sdb/queue/rq_affinity", "2"),)
    warnings = ["an unrelated warning", *plan.warnings]
    found, told = environment.tuning_failed(plan.environment, warnings, "sh: 1: Permission denied\n", host_name="h1")
    assert "rq_affinity_set" not in found["device"] and found["device"]["rq_affinity"] == 1
    assert told[0] == "an unrelated warning"
    assert told[1].startswith("rq_affinity of sdb stayed 1: the write of 2 failed on the host (sh: 1: Permission")
    assert told[1].endswith("echo 2 | sudo tee /sys/block/sdb/queue/rq_affinity")
    assert environment.environment_changes(env, found) == []
