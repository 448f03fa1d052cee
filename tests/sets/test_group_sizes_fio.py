"""A group-size sweep end to end (issue 32's "done when": the sweep on the three test hosts draws its curve): real fio
on three hosts, each its own test sshd on its own port, a real Celery worker and Redis, sizes 1, 2 and 3 one after
another, each size's members started at one instant; then its page in a real Chromium at 390 and 1280 px."""

from __future__ import annotations

import pytest

from jobs.models import Disk, Run, RunSet
from jobs.sets import requesting
from tests.browser import assert_fits, log_in, wait_until
from tests.builders import quick_profile, target_dir, wait_final
from tests.factories import HostFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_sweep_of_one_two_and_three_hosts_runs_size_after_size_and_its_page_draws_the_curve(
    fio_installed, sshd, sshd_factory, worker_factory, team, live_server, page, phone_page, screenshot, tmp_path
):
    # A worker of its own, not one kept from an earlier test: in one ./bw test of four, the second size's members
    # were claimed and then never ran with the kept worker (not reproduced alone or after the group test).
    worker_factory()
    disks = []
    for number, server in enumerate([sshd, sshd_factory(), sshd_factory()], 1):
        host = HostFactory.for_sshd(server, team=team, name=f"host-{number}")
        disks.append(Disk.objects.create(host=host, label="tmp", target_path=target_dir(tmp_path / f"host-{number}"),
                                         disk_type="custom"))  # fmt: skip

    run_set = requesting.request_group_sizes(disks, quick_profile(team, runtime_s=2), [1, 2, 3])
    run_set = wait_final(run_set, timeout=150)

    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    assert run_set.explanation == "finished: 3 of 3 sizes succeeded"
    made = list(run_set.members.order_by("set_index"))
    assert [m.disk.host.name for m in made] == ["host-1", "host-1", "host-2", "host-1", "host-2", "host-3"]
    assert all(m.state == Run.State.SUCCEEDED for m in made)
    # Each size started at one instant of its own, once the size before it had ended.
    for size in (made[1:3], made[3:]):
        assert len({m.not_before for m in size}) == 1
    assert made[0].finished_at <= made[1].queued_at and max(m.finished_at for m in made[1:3]) <= made[3].queued_at
    sizes = run_set.result["sizes"]
    assert [s["members"] for s in sizes] == [1, 2, 3]
    assert all(s["total_iops"] > 0 and len(s["member_iops"]) == s["members"] for s in sizes)
    assert [s["total_iops"] for s in sizes] == pytest.approx([sum(s["member_iops"]) for s in sizes])
    sentence = run_set.result["saturation"]["text"]
    assert sentence.startswith(("from 1 member ", "from 2 members", "total IOPS still grew"))

    for screen, name in ((page, "desktop"), (phone_page, "phone")):
        log_in(screen, live_server.url, "olga", "a-long-test-password-1")
        screen.goto(f"{live_server.url}/sets/{run_set.pk}/")
        wait_until(screen, "window.Chart && Chart.getChart('sizes-chart')")
        drawn = screen.evaluate(
            "Chart.getChart('sizes-chart').data.datasets.map((d) => ({label: d.label, data: d.data}))"
        )
        by_label = {d["label"]: d["data"] for d in drawn}
        assert by_label["total IOPS (left axis)"] == pytest.approx([s["total_iops"] for s in sizes])
        assert by_label["a member, mean (right axis)"] == pytest.approx([s["mean_iops"] for s in sizes])
        assert by_label["a member, lowest"] == pytest.approx([s["min_iops"] for s in sizes])
        assert by_label["a member, highest"] == pytest.approx([s["max_iops"] for s in sizes])
        assert screen.locator("#sizes-answer").inner_text() == sentence[0].upper() + sentence[1:]
        assert screen.locator("#sizes-table tbody tr").count() == 3
        assert_fits(screen, name)
        assert screen.js_errors == []
        screenshot(name, screen)
