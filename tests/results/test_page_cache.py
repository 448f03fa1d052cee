"""The overview's Disks table and a disk page's Compliance card are kept between results (jobs/results/page_cache.py):
a repeat view reads fewer queries, and every write they are drawn from shows on the very next view."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import ChangePoint, Disk, Host, Run, RunResult
from tests.factories import RunFactory, fio_summary, nightly_runs, noisy

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def _queries_twice(client: Client, url: str) -> tuple[int, int]:
    """The queries of a view and of the view again, both within one minute (the minute is part of the key)."""
    while True:
        minute = timezone.now().replace(second=0, microsecond=0)
        cache.clear()
        counts = []
        for _ in range(2):
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            counts.append(len(captured.captured_queries))
        if timezone.now().replace(second=0, microsecond=0) == minute:
            return counts[0], counts[1]


def _succeeded(disk: Disk, iops: float = 4000.0):
    return RunFactory(disk=disk, succeeded=True, summary=fio_summary(read_iops=iops), recorded=True)


def _compliance_runs(client: Client, disk: Disk, query: str = "?period=all") -> str:
    page = client.get(f"/disks/{disk.pk}/{query}").content.decode()
    found = re.search(r'id="compliance-runs">(\d+) run', page)
    assert found, "the Compliance card counts runs"
    return found.group(1)


def test_a_repeat_overview_is_drawn_from_the_cache(owner_client, disk):
    _succeeded(disk)
    first, again = _queries_twice(owner_client, "/overview/")
    assert again < first


def test_a_repeat_disk_page_is_drawn_from_the_cache(owner_client, disk):
    _succeeded(disk)
    first, again = _queries_twice(owner_client, f"/disks/{disk.pk}/")
    assert again < first


def test_a_new_result_shows_on_the_next_overview(owner_client, disk):
    older = _succeeded(disk)
    assert f"/runs/{older.pk}/" in owner_client.get("/overview/").content.decode()
    newer = _succeeded(disk)
    page = owner_client.get("/overview/").content.decode()
    assert f"/runs/{newer.pk}/" in page and f"/runs/{older.pk}/" not in page


def test_a_deleted_run_leaves_the_next_overview(owner_client, disk):
    older = _succeeded(disk)
    newer = _succeeded(disk)
    assert f"/runs/{newer.pk}/" in owner_client.get("/overview/").content.decode()
    newer.delete()
    page = owner_client.get("/overview/").content.decode()
    assert f"/runs/{older.pk}/" in page and f"/runs/{newer.pk}/" not in page


def test_a_result_recorded_again_with_other_figures_shows_on_the_next_overview(owner_client, disk):
    run = _succeeded(disk, iops=1234.0)
    assert "1.23k IOPS" in owner_client.get("/overview/").content.decode()
    run.summary = fio_summary(read_iops=2345.0)
    run.save(update_fields=["summary"])
    RunResult.record(run)
    page = owner_client.get("/overview/").content.decode()
    assert "2.35k IOPS" in page and "1.23k IOPS" not in page


def test_a_renamed_disk_shows_on_the_next_overview(owner_client, disk):
    _succeeded(disk)
    assert ">data</a>" in owner_client.get("/overview/").content.decode()
    Disk.objects.filter(pk=disk.pk).update(label="renamed")
    page = owner_client.get("/overview/").content.decode()
    assert ">renamed</a>" in page and ">data</a>" not in page


def test_a_new_result_shows_on_the_next_disk_page(owner_client, disk):
    _succeeded(disk)
    assert _compliance_runs(owner_client, disk) == "1"
    _succeeded(disk)
    assert _compliance_runs(owner_client, disk) == "2"


def test_a_run_deleted_in_the_admin_leaves_the_next_disk_page(owner, owner_client, disk):
    """The admin is where a run is deleted; it keeps the day rollups the card counts from in step."""
    _succeeded(disk)
    gone = _succeeded(disk)
    assert _compliance_runs(owner_client, disk) == "2"
    User.objects.filter(pk=owner.pk).update(is_staff=True, is_superuser=True)
    answer = owner_client.post(f"/admin/jobs/run/{gone.pk}/delete/", {"post": "yes"})
    assert answer.status_code == 302 and not Run.objects.filter(pk=gone.pk).exists()
    assert _compliance_runs(owner_client, disk) == "1"


def test_another_query_string_is_another_compliance_card(owner_client, disk):
    run = _succeeded(disk)
    run.finished_at = timezone.now() - timezone.timedelta(days=20)
    run.save(update_fields=["finished_at"])
    RunResult.record(run)
    _succeeded(disk)
    assert _compliance_runs(owner_client, disk, "?period=all") == "2"
    assert _compliance_runs(owner_client, disk, "?period=7d") == "1"


def test_a_result_on_another_disk_of_the_site_shows_in_the_next_shared_drops(owner_client, disk):
    """The card's shared drops read the site's disks: their results are part of its key."""
    disk.host.site = "lab"
    disk.host.save(update_fields=["site"])
    neighbour = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom",
                                    spec_iops=4000)  # fmt: skip
    _succeeded(disk)
    before = owner_client.get(f"/disks/{disk.pk}/?period=all").content.decode()
    cache_keys_before = len(cache._cache)  # type: ignore[attr-defined]  # the local-memory cache's entries
    _succeeded(neighbour)
    owner_client.get(f"/disks/{disk.pk}/?period=all")
    assert 'id="shared-drops' in before
    assert len(cache._cache) > cache_keys_before  # type: ignore[attr-defined]  # a new key: drawn again


def test_a_disk_page_offers_notes_on_its_own_host_only_and_the_changes_page_on_any(owner_client, disk, credential):
    """Every disk of the team was an <option> of the disk page's note form: most of its CPU with 200 disks."""
    elsewhere = Host.objects.create(team=disk.team, name="vm2", address="127.0.0.2", username="bench",
                                    credential=credential)  # fmt: skip
    far = Disk.objects.create(host=elsewhere, label="far", target_path="/data/far", disk_type="custom", spec_iops=1)
    disk_page, changes = (_note_form(owner_client, url) for url in (f"/disks/{disk.pk}/", "/changes/"))
    assert f'<option value="{disk.pk}" selected>' in disk_page
    assert f'<option value="{far.pk}"' not in disk_page and f'<option value="{far.pk}"' in changes


def _note_form(client: Client, url: str) -> str:
    found = re.search(r'<select name="disk".*?</select>', client.get(url).content.decode(), re.DOTALL)
    assert found, f"{url} has a note form"
    return found.group(0)


def test_a_change_point_marked_expected_shows_on_the_next_disk_page(owner_client, disk):
    """The Changes card is not kept: the note the marking makes is on the very next view of the disk page."""
    rng = random.Random(20)
    nightly_runs(disk, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    change = ChangePoint.objects.filter(disk=disk).order_by("-at").first()
    assert change is not None, "the drop is found"
    assert "new firmware" not in owner_client.get(f"/disks/{disk.pk}/").content.decode()
    owner_client.post(f"/changes/{change.pk}/expected", {"text": "new firmware", "next": f"/disks/{disk.pk}/"})
    assert "new firmware" in owner_client.get(f"/disks/{disk.pk}/").content.decode()
