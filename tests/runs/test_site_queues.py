"""Workers per site: a host's site routes its runs to the Celery queue site.<name>, and only a worker
listening there runs them (real workers, Redis, sshd and fio)."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.utils import timezone
from kombu.exceptions import ChannelError

from jobs import messages
from jobs.models import Disk, Host, Run
from jobs.runs import launching, queueing, sites, states, steps, stopping, sweeping
from tests.browser import log_in
from tests.builders import quick_profile, target_dir, team_with_host, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_each_sites_runs_are_executed_by_that_sites_worker_which_logs_in_to_its_own_sites_hosts_only(
    fio_installed, sshd, worker_factory, tmp_path
):
    east_worker = worker_factory(queues="site.east")
    west_worker = worker_factory(queues="site.west")
    team, east = team_with_host(sshd, site="east")
    copied = ("address", "port", "username", "credential", "host_key_type", "host_key_b64", "host_key_fingerprint",
              "run_base_dir")  # fmt: skip
    west = Host.objects.create(team=team, name="west-vm", site="west", **{f: getattr(east, f) for f in copied})
    profile = quick_profile(team, runtime_s=2, size_bytes=4 * 2**20)
    runs = {}
    for name, host in (("east", east), ("west", west)):
        disk = Disk.objects.create(host=host, label=name, target_path=target_dir(tmp_path / name), disk_type="custom")
        runs[name] = queueing.request_run(disk, profile)
    for name, run in runs.items():
        run = wait_final(run)
        assert run.state == Run.State.SUCCEEDED, (name, run.explanation)
    east_log, west_log = east_worker.log.read_text(), west_worker.log.read_text()
    assert f"run {runs['east'].pk}: launching" in east_log
    assert f"run {runs['east'].pk}: launching" not in west_log
    assert f"run {runs['west'].pk}: launching" in west_log
    assert f"run {runs['west'].pk}: launching" not in east_log
    # A worker of one site never opened a session to a host of the other (each login is in its worker's log),
    # and opened one to its own site's host, once, for the launch, the watching and the collection.
    assert east_log.count("logged in to host ") == east_log.count(f"logged in to host {east.name} (site east)") == 1
    assert west_log.count("logged in to host ") == west_log.count("logged in to host west-vm (site west)") == 1


def test_a_run_whose_site_has_no_worker_says_which_queue_it_waits_on(db, host, disk):
    host.site = "mars"
    host.save()
    run = queueing.create_run(disk, quick_profile(disk.team))
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED, queued_at=run.created_at,
                                         heartbeat_at=run.created_at)  # fmt: skip
    sweeping.sweep(run.created_at + sweeping.UNCLAIMED_AFTER + sweeping.STALE_AFTER)
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED
    assert "queued on site.mars" in run.explanation and "-Q site.mars" in run.explanation


@pytest.fixture(autouse=True)
def _fresh_answer_from_the_workers():
    """Each test starts its own workers: no answer kept from another test's."""
    sites.forget()
    yield
    sites.forget()


def test_a_worker_that_serves_every_site_runs_a_site_set_after_it_started(fio_installed, sshd, worker_factory,
                                                                          tmp_path):  # fmt: skip
    every = worker_factory(env={"BENCHWEB_WORKER_EVERY_SITE": "1"})  # -Q celery only, as `./bw run` starts it
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="lab", target_path=target_dir(tmp_path), disk_type="custom")
    Host.objects.filter(pk=host.pk).update(site="lab")  # set once the worker is up
    disk.refresh_from_db()
    assert sites.status("lab").served, sites.status("lab").text
    run = queueing.request_run(disk, quick_profile(team, runtime_s=2, size_bytes=4 * 2**20))
    assert run.explanation == "queued for a worker"
    run = wait_final(run, timeout=60)
    assert run.state == Run.State.SUCCEEDED, run.explanation
    log = every.log.read_text()
    assert "now consumes site.lab" in log and f"run {run.pk}: launching" in log


def test_a_run_queued_for_a_site_no_worker_serves_says_so_at_once_on_its_page_and_in_the_api(
    worker, host, disk, client, owner
):
    Host.objects.filter(pk=host.pk).update(site="lab")
    disk.refresh_from_db()
    run = queueing.request_run(disk, quick_profile(disk.team))
    assert run.state == Run.State.QUEUED
    expected = (
        "waiting for a worker of site lab: none is running; start one with `celery -A benchweb worker -Q site.lab` "
        "(near the host, against the same database and broker) or clear the host's site"
    )
    assert run.explanation == expected
    client.force_login(owner)
    assert client.get(f"/api/v1/runs/{run.pk}/").json()["explanation"] == expected
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "waiting for a worker of site lab: none is running" in page

    # The one worker of the default queue still runs the hosts without a site.
    Host.objects.filter(pk=host.pk).update(site="")
    assert not sites.unserved("")


def _purge(queue: str) -> None:
    from benchweb.celery import app

    with app.connection_for_write() as connection:
        with contextlib.suppress(ChannelError):
            connection.default_channel.queue_purge(queue)


def test_the_sweep_sends_no_second_message_while_the_sites_queue_holds_messages_no_worker_took(broker, host, disk):
    """A launch or collection waiting in a busy site's queue is not sent again: under load, second messages for runs
    only waiting their turn made the queue longer and doubled launches (the fleet bench saw 680 for 2,000 runs)."""
    Host.objects.filter(pk=host.pk).update(site="busy")
    run = queueing.create_run(disk, quick_profile(disk.team))
    queue = sites.queue_for("busy")
    _purge(queue)
    old = timezone.now() - sweeping.STALE_AFTER - timedelta(seconds=5)
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED, queued_at=old, heartbeat_at=old)
    try:
        # Nothing waits in the queue: the launch message was lost (or a killed worker held it), so it is sent again.
        assert messages.waiting(queue) == 0
        assert sweeping.sweep() == 1
        assert messages.waiting(queue) == 1
        # Stale again while that message still waits for a worker: not sent twice, and the page says why it waits.
        Run.objects.filter(pk=run.pk).update(heartbeat_at=old)
        assert sweeping.sweep() == 0
        assert messages.waiting(queue) == 1
        run.refresh_from_db()
        assert run.state == Run.State.QUEUED and run.heartbeat_at > old
        behind = "queued on site.busy for 35 s, behind 1 message no worker has taken yet"
        assert behind in run.explanation, run.explanation
        # Not for ever: a worker killed with -9 took its messages with it, and a site kept busy by other runs may not
        # empty its queue for minutes. BACKLOG_PATIENCE after the sweep first held it back, it is sent anyway.
        held_since = run.backlog_since
        assert held_since is not None and held_since == run.heartbeat_at
        later = held_since + sweeping.BACKLOG_PATIENCE + sweeping.STALE_AFTER
        Run.objects.filter(pk=run.pk).update(heartbeat_at=later - sweeping.STALE_AFTER - timedelta(seconds=1))
        assert sweeping.sweep(now=later) == 1 and messages.waiting(queue) == 2
        run.refresh_from_db()
        assert run.backlog_since is None and run.heartbeat_at == later
        assert "behind 1 message no worker has taken yet" in run.explanation, run.explanation  # not "no worker"
        _purge(queue)
        # A collection waits in the same queue, so it waits alike; once the queue is empty, it is sent again.
        steps.send("launch", run)  # another run's message, waiting for a worker
        states.move(run, (Run.State.QUEUED,), Run.State.LAUNCHING)
        Run.objects.filter(pk=run.pk).update(backlog_since=old)  # held back long ago, as a queued run
        states.move(run, (Run.State.LAUNCHING,), Run.State.RUNNING)
        states.move(run, (Run.State.RUNNING,), Run.State.COLLECTING)
        run.refresh_from_db()
        assert run.backlog_since is None  # a new step is a new wait: the queued run's does not count for it
        Run.objects.filter(pk=run.pk).update(heartbeat_at=old)
        assert sweeping.sweep() == 0 and messages.waiting(queue) == 1
        _purge(queue)
        Run.objects.filter(pk=run.pk).update(heartbeat_at=old)
        assert sweeping.sweep() == 1 and messages.waiting(queue) == 1
    finally:
        _purge(queue)


def test_cancelling_a_queued_run_that_no_worker_holds_ends_it_at_once_and_its_late_launch_starts_nothing(
    db, host, disk, client, owner
):
    host.site = "lab"
    host.save()
    run = queueing.create_run(disk, quick_profile(disk.team))
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED, queued_at=run.created_at,
                                         heartbeat_at=run.created_at)  # fmt: skip
    client.force_login(owner)
    answer = client.post(f"/api/v1/runs/{run.pk}/cancel/")
    assert answer.status_code == 200, answer.content
    assert answer.json()["state"] == Run.State.CANCELLED
    run.refresh_from_db()
    assert run.state == Run.State.CANCELLED and run.finished_at is not None
    assert run.explanation == "cancelled before it started"
    # The launch message a site worker started later takes finds the run ended: no connection is tried.
    assert launching.launch(run.pk) == Run.State.CANCELLED
    run.refresh_from_db()
    assert run.launch_attempt == 0 and run.state == Run.State.CANCELLED


def test_a_queued_run_a_launch_took_first_is_cancelled_as_a_launching_one(db, host, disk):
    run = queueing.create_run(disk, quick_profile(disk.team))
    Run.objects.filter(pk=run.pk).update(state=Run.State.QUEUED)
    stale = Run.objects.get(pk=run.pk)  # read as queued; the launch moves it on before the cancel's UPDATE
    Run.objects.filter(pk=run.pk).update(state=Run.State.LAUNCHING, launch_attempt=1)
    stopping.cancel(stale)
    run.refresh_from_db()
    assert run.state == Run.State.LAUNCHING and run.cancel_requested and run.explanation == "cancelling"


def test_the_host_form_says_which_workers_serve_a_site_and_warns_when_none_does(worker_factory, host, client, owner):
    worker_factory(queues="celery,site.east")
    every = worker_factory(env={"BENCHWEB_WORKER_EVERY_SITE": "1"})
    client.force_login(owner)
    form = client.get(f"/hosts/{host.pk}/edit/").content.decode()
    assert "For analysis, the Stability card compares the hosts of one site" in form
    assert "For routing, the host&#x27;s runs go to queue site.&lt;name&gt;" in form
    assert 'id="site-workers-data"' in form and '"every_site": ["test1-' in form

    every.stop()
    sites.forget()
    Host.objects.filter(pk=host.pk).update(site="east")
    form = client.get(f"/hosts/{host.pk}/edit/").content.decode()
    assert "Runs go to queue site.east, served by test0-" in form

    Host.objects.filter(pk=host.pk).update(site="lab")
    detail = client.get(f"/hosts/{host.pk}/").content.decode()
    assert "No running worker serves site lab: this host&#x27;s runs would wait in queue site.lab" in detail
    form = client.get(f"/hosts/{host.pk}/edit/").content.decode()
    assert 'class="warn"' in form and "No running worker serves site lab" in form


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_host_form_warns_as_a_site_no_worker_serves_is_typed(width, worker, host, owner, page, phone_page,
                                                                 live_server, screenshot):  # fmt: skip
    page = page if width == "desktop" else phone_page
    owner.set_password("a-long-test-password-1")
    owner.save()
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/hosts/{host.pk}/edit/")
    line = page.locator("#site-workers")
    assert line.inner_text().startswith("Runs go to queue celery, served by test0-")
    page.locator("#id_site").fill("mars")
    assert line.inner_text() == (
        "No running worker serves site mars: this host's runs would wait in queue site.mars. Start one near the "
        "host with `celery -A benchweb worker -Q site.mars`, or leave the site empty."
    )
    assert line.get_attribute("class") == "warn"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    line.scroll_into_view_if_needed()
    screenshot(f"typed-{width}", on=page)
    page.get_by_role("button", name="Save host").click()
    page.wait_for_url(f"{live_server.url}/hosts/{host.pk}/")
    assert "No running worker serves site mars" in page.locator("#site-workers").inner_text()
    assert "Host vm1 saved." in page.locator("ul.messages").inner_text()
    assert "No running worker serves site mars" in page.locator("ul.messages li.warning").inner_text()
    screenshot(f"saved-{width}", on=page)
    assert page.js_errors == []


def test_a_sites_worker_takes_a_hosts_observation_and_a_stop_before_the_runs_launches_and_collections(
    broker, host, disk, django_capture_on_commit_callbacks
):
    """Issue 34's fault run: a killed worker's hosts were observed again 200 s after the kill, their handover waiting
    behind a thousand launches in the site's queue. The broker hands out what does something for many runs or for a
    person first; a run's own launches and collections keep their order among themselves."""
    from benchweb.celery import app

    Host.objects.filter(pk=host.pk).update(site="busy")
    host.refresh_from_db()
    queue = sites.queue_for("busy")
    _purge(queue)
    profile = quick_profile(disk.team)
    first, second = (queueing.create_run(disk, profile) for _ in range(2))
    try:
        steps.send("launch", first)
        steps.send("collect", second)
        steps.send("launch", second)
        with django_capture_on_commit_callbacks(execute=True):
            assert steps.watch(host)  # a host no observer holds: its observation goes out
        steps.send("stop", first)
        assert messages.waiting(queue) == 5
        taken = []
        with app.connection_for_write() as connection:
            channel = connection.default_channel
            while (message := channel.basic_get(queue, no_ack=True)) is not None:
                taken.append((message.headers["task"], message.payload[0][0]))  # (args, kwargs, embed)
        assert taken == [
            (messages.OBSERVE_HOST, host.pk),
            (messages.STOP_RUN, first.pk),
            (messages.LAUNCH_RUN, first.pk),
            (messages.COLLECT_RUN, second.pk),
            (messages.LAUNCH_RUN, second.pk),
        ]
    finally:
        _purge(queue)
