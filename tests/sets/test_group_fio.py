"""A synchronised group end to end: real fio on three hosts, each its own test sshd on its own port, a real Celery
worker and Redis (issue 32's "done when": the starts within 1 s, the stored total the members' sum over the stated
window; each host's clock offset measured over its session at the launch)."""

from __future__ import annotations

import statistics
from datetime import timedelta

import pytest

from jobs import remote
from jobs.models import Disk, Run, RunSample, RunSet
from jobs.sets import group_result, requesting
from tests.builders import quick_profile, target_dir, wait_final
from tests.factories import HostFactory, TeamFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_group_of_three_hosts_starts_within_a_second_and_stores_the_sum_of_its_members(
    fio_installed, sshd, sshd_factory, worker, tmp_path
):
    team = TeamFactory(name="bench team")
    disks = []
    for number, server in enumerate([sshd, sshd_factory(), sshd_factory()], 1):
        host = HostFactory.for_sshd(server, team=team, name=f"host-{number}")
        disks.append(Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path / f"host-{number}"),
                                         disk_type="custom"))  # fmt: skip
    assert len({disk.host.port for disk in disks}) == 3

    run_set = requesting.request_group(disks, quick_profile(team, runtime_s=4))
    run_set = wait_final(run_set, timeout=120)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    members = list(run_set.members.order_by("set_index"))
    assert all(m.state == Run.State.SUCCEEDED for m in members)
    # Each host's wrapper waited for the one instant, and the starts its host measured lie within 1 s.
    start = members[0].not_before
    assert {m.not_before for m in members} == {start}
    assert all(m.started_at >= start - timedelta(seconds=0.05) for m in members)
    starts = [m.started_at.timestamp() for m in members]
    assert max(starts) - min(starts) < 1
    result = run_set.result
    # Each host's clock was measured over its session at the launch: all three are this machine's clock, so each
    # offset is 0 within its uncertainty, and the spread on the common clock is the hosts' within theirs.
    clocks = [m.clock_offset for m in members]
    assert all(c["probes"] == remote.PROBES and abs(c["offset_s"]) <= c["uncertainty_s"] + 1e-6 for c in clocks)
    assert result["offsets"] == group_result.OFFSETS_MEASURED and result["offsets_not_measured"] == []
    assert [m["clock_offset_s"] for m in result["members"]] == [c["offset_s"] for c in clocks]
    widest = sum(sorted(c["uncertainty_s"] for c in clocks)[-2:])
    assert result["start_spread"]["spread_s"] == pytest.approx(max(starts) - min(starts), abs=widest + 1e-6)
    assert result["start_spread"]["uncertainty_s"] <= widest + 1e-9
    assert result["start_spread"]["text"].startswith("started within ")
    # The disks have no spec: no limit, naming the members without one.
    assert result["limit"]["iops"] is None
    assert result["limit"]["why"] == "member 1, member 2, member 3 have no theoretical limit"
    assert [m["started_epoch"] for m in result["members"]] == pytest.approx(starts)

    # The stored total over the window it names is the members' own samples summed: each member's mean over
    # its seconds wholly inside the window.
    window = result["windows"]["all_running"]
    assert window["seconds"] > 1
    expected = 0.0
    for member, begun in zip(members, starts, strict=True):
        inside = [
            (read or 0.0) + (write or 0.0)
            for t_s, read, write in RunSample.objects.filter(run=member).values_list("t_s", "read_iops", "write_iops")
            if begun + t_s - 1 >= window["start"] - 1e-6 and begun + t_s <= window["end"] + 1e-6
        ]
        assert inside, f"member {member.set_index} has no second inside the window"
        expected += statistics.fmean(inside)
    total = result["totals"]["all_running"]
    assert total["what"] == "while every member ran (from the last start to the first end)"
    assert total["window"] == window
    assert total["iops"] == pytest.approx(expected) and total["iops"] > 0
    assert result["totals"]["whole_runs"]["iops"] == pytest.approx(
        sum(m.summary["total"]["iops"] for m in members), rel=1e-4
    )
