"""A group member's host clock measured at its launch (jobs/runs/launching.py measure_clock) over a real session to
the test sshd: the offset kept on the run; a failed probe kept as the reason, never raised into the launch; any
other run left alone."""

from __future__ import annotations

import pytest

from jobs import remote, ssh
from jobs.models import Disk, Run
from jobs.runs import launching
from jobs.sets import requesting
from tests.factories import ProfileFactory, RunFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def member(disk) -> Run:
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    run_set = requesting.create_group([disk, other], ProfileFactory(team=disk.team))
    return run_set.members.get(set_index=0)


def test_a_members_offset_is_kept_and_a_failed_probe_is_kept_as_its_reason(sshd, member):
    with ssh.connect(sshd.target()) as connection:
        launching.measure_clock(connection, member)
    member.refresh_from_db()
    found = member.clock_offset
    assert found["probes"] == remote.PROBES and abs(found["offset_s"]) <= found["uncertainty_s"] + 1e-6
    assert found["uncertainty_s"] == pytest.approx(found["delay_s"] / 2)

    # Measured once: a re-attached launch keeps it. A second member whose connection has dropped is not measured,
    # and says why, and nothing is raised into its launch.
    connection = ssh.connect(sshd.target())
    connection.close()
    launching.measure_clock(connection, member)
    member.refresh_from_db()
    assert member.clock_offset == found
    second = member.run_set.members.get(set_index=1)
    launching.measure_clock(connection, second)
    second.refresh_from_db()
    assert second.clock_offset["why"].startswith("offset not measured: The connection to 127.0.0.1:")
    assert "offset_s" not in second.clock_offset


def test_a_run_outside_a_group_is_not_probed(sshd, disk):
    run = RunFactory(disk=disk)
    connection = ssh.connect(sshd.target())
    connection.close()  # a probe would fail and be stored; none is made
    launching.measure_clock(connection, run)
    run.refresh_from_db()
    assert run.clock_offset is None
