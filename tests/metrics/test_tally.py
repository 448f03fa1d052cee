"""benchweb_runs from a kept tally (jobs/metrics/tally.py): the counts a scrape reports are the exact counts of
the team's runs by state, whatever moved, was made, imported late or deleted since the tally was kept, and a
scrape with a tally reads only the runs after its watermark."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.admin.sites import AdminSite
from django.db import connection
from django.db.models import Count
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.admin import RunAdmin
from jobs.metrics import tally
from jobs.models import Disk, Run, RunTally
from tests.factories import DiskFactory, HostFactory, RunFactory, TeamFactory

pytestmark = pytest.mark.django_db

LATER = timedelta(hours=2)  # past tally.SETTLED: the runs made now count as settled


def exact(team) -> Counter[str]:
    return Counter(dict(Run.objects.filter(team=team).values_list("state").annotate(n=Count("pk")).order_by()))


def reported(team, now) -> Counter[str]:
    return Counter({state: n for (team_id, state), n in tally.runs_by_state([team.pk], now).items() if n})


@pytest.fixture
def disk():
    return DiskFactory(host=HostFactory(team=TeamFactory()))


def test_the_counts_stay_exact_as_runs_move_and_the_watermark_follows_the_first_run_still_going(disk):
    team = disk.team
    old = [RunFactory(disk=disk, state=Run.State.SUCCEEDED) for _ in range(3)]
    going = RunFactory(disk=disk, state=Run.State.RUNNING)
    after = [RunFactory(disk=disk, failed=True) for _ in range(2)]
    now = timezone.now() + LATER

    assert reported(team, now) == exact(team)
    kept = RunTally.objects.get(team=team)
    assert kept.upto == old[-1].pk  # not past the run still going
    assert kept.counts == {"succeeded": 3}

    Run.objects.filter(pk=going.pk).update(state=Run.State.FAILED)
    assert reported(team, now) == exact(team) == Counter({"succeeded": 3, "failed": 3})
    assert RunTally.objects.get(team=team).upto == after[-1].pk  # all final and settled now
    RunFactory(disk=disk, state=Run.State.PENDING)
    assert reported(team, now) == exact(team)


def test_a_scrape_with_a_tally_reads_only_the_runs_after_it(disk):
    team = disk.team
    for _ in range(5):
        RunFactory(disk=disk, state=Run.State.SUCCEEDED)
    now = timezone.now() + LATER
    reported(team, now)
    newest = RunFactory(disk=disk, state=Run.State.QUEUED)
    with CaptureQueriesContext(connection) as queries:
        got = reported(team, now)
    assert got == exact(team)
    counting = [q["sql"] for q in queries.captured_queries if 'FROM "jobs_run" ' in q["sql"]]
    assert counting and all(f"> {newest.pk - 1}" in sql for sql in counting), counting


def test_runs_made_within_the_settled_time_stay_above_the_watermark(disk):
    team = disk.team
    RunFactory(disk=disk, state=Run.State.SUCCEEDED)
    recent = RunFactory(disk=disk, state=Run.State.SUCCEEDED)
    now = timezone.now()  # both made just now: not settled
    assert reported(team, now) == exact(team)
    assert RunTally.objects.get(team=team).upto == 0
    # A run committed late with an id between (a long import's) is still counted.
    Run.objects.filter(pk=recent.pk).update(id=recent.pk + 10)
    RunFactory(disk=disk, state=Run.State.CANCELLED, pk=recent.pk)
    assert reported(team, now) == exact(team) == Counter({"succeeded": 2, "cancelled": 1})


def _counted_afresh(queries) -> bool:
    """Did the scrape count the team's runs from the first (a query over runs with no watermark)?"""
    return any('FROM "jobs_run" ' in q["sql"] and '"jobs_run"."id" > 0' in q["sql"] for q in queries)


def test_deleting_a_host_a_disk_or_runs_in_the_admin_takes_their_runs_off_without_counting_again(disk):
    team = disk.team
    other, elsewhere = DiskFactory(host=disk.host), DiskFactory(host=HostFactory(team=team))
    for d in (disk, other, elsewhere):
        for _ in range(2):
            RunFactory(disk=d, state=Run.State.SUCCEEDED)
    RunFactory(disk=disk, failed=True)
    RunFactory(disk=other, state=Run.State.CANCELLED)
    now = timezone.now() + LATER
    assert reported(team, now) == Counter({"succeeded": 6, "failed": 1, "cancelled": 1})

    def after(change) -> Counter[str]:
        change()
        with CaptureQueriesContext(connection) as queries:
            got = reported(team, now)
        assert not _counted_afresh(queries.captured_queries)
        assert got == exact(team)
        return got

    assert after(lambda: Disk.objects.filter(pk=other.pk).delete()) == Counter({"succeeded": 4, "failed": 1})
    assert after(lambda: elsewhere.host.delete()) == Counter({"succeeded": 2, "failed": 1})  # its disks with it
    admin = RunAdmin(Run, AdminSite())
    request = RequestFactory().post("/")
    failed = Run.objects.filter(team=team, state=Run.State.FAILED)
    assert after(lambda: admin.delete_queryset(request, failed)) == Counter({"succeeded": 2})
    assert after(lambda: admin.delete_model(request, Run.objects.filter(team=team).first())) == Counter(
        {"succeeded": 1}
    )


def test_runs_deleted_some_other_way_are_noticed_and_counted_again(disk):
    team = disk.team
    other = DiskFactory(host=disk.host)
    for d in (disk, other):
        RunFactory(disk=d, state=Run.State.SUCCEEDED)
    now = timezone.now() + LATER
    reported(team, now)
    with connection.cursor() as cursor:  # as a shell or SQL would: no signal
        cursor.execute("DELETE FROM jobs_run WHERE disk_id = %s", [other.pk])
        cursor.execute("DELETE FROM jobs_disk WHERE id = %s", [other.pk])
    with CaptureQueriesContext(connection) as queries:
        got = reported(team, now)
    assert _counted_afresh(queries.captured_queries)
    assert got == exact(team) == Counter({"succeeded": 1})


def test_another_teams_runs_are_not_counted(disk):
    elsewhere = DiskFactory(host=HostFactory(team=TeamFactory()))
    RunFactory(disk=elsewhere, state=Run.State.SUCCEEDED)
    RunFactory(disk=disk, failed=True)
    now = timezone.now() + LATER
    assert reported(disk.team, now) == Counter({"failed": 1})
    assert reported(elsewhere.team, now) == Counter({"succeeded": 1})
