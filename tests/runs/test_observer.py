"""The observer loop (jobs/runs/observer.py) holds a host while its token is the host's: it gives it back when no
run is left, drops it when another observer took it, keeps it when a stale message brings an old token, and a
worker that stops gives its hosts back. Steps run inline (Observer(inline=True)); hosts that do not answer are the
factories' (no approved key: refused before any network), so the host side is the failure path here; the reading
side is tests/runs/test_observing.py's, with a real sshd."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Host, Run
from jobs.runs import observer, steps, sweeping
from tests.factories import DiskFactory, HostFactory, RunFactory

pytestmark = pytest.mark.django_db


def _held_host(running: bool) -> tuple[Host, observer.Observer, str]:
    host = HostFactory()
    if running:
        RunFactory(disk=DiskFactory(host=host), running=True, remote_dir="/tmp/benchweb/runs/not-reached")
    assert steps.watch(host)
    token = Host.objects.get(pk=host.pk).observer_token
    looking = observer.Observer(inline=True)
    looking.adopt(host.pk, token)
    return host, looking, token


def test_a_host_with_no_running_run_is_given_back_at_its_first_step():
    host, looking, _ = _held_host(running=False)
    looking.run_round()
    assert looking.holds() == {}
    assert Host.objects.get(pk=host.pk).observer_token == ""


def test_a_host_another_observer_took_is_dropped_and_its_token_left_alone():
    host, looking, _ = _held_host(running=True)
    Host.objects.filter(pk=host.pk).update(observer_token="theirs")
    looking.run_round()
    assert looking.holds() == {}
    assert Host.objects.get(pk=host.pk).observer_token == "theirs"


def test_an_old_token_handed_over_after_the_current_one_does_not_make_the_observer_drop_its_host():
    host, looking, token = _held_host(running=True)
    looking.run_round()
    looking.adopt(host.pk, "an-old-token-a-restarted-broker-kept")
    looking.run_round()
    assert looking.holds() == {host.pk: token}
    run = Run.objects.get(disk__host=host)
    # Its step went to the host (which refused): the run says so and goes on.
    assert run.state == Run.State.RUNNING and "the last look at the host failed" in run.explanation


def test_a_stopping_worker_gives_its_hosts_back_so_that_the_next_watch_hands_them_on_at_once():
    host, looking, _ = _held_host(running=True)
    looking.run_round()
    looking.stop()
    assert looking.holds() == {}
    assert Host.objects.get(pk=host.pk).observer_token == ""
    assert steps.watch(host)  # not stale yet, but given back: a new observer is handed it at once


def test_the_sweep_hands_on_a_host_whose_observer_stopped_stepping_it_or_gave_it_back_and_leaves_a_live_one():
    now = timezone.now()
    dead, given_back, alive = (HostFactory() for _ in range(3))
    for host in (dead, given_back, alive):
        RunFactory(disk=DiskFactory(host=host), running=True, heartbeat_at=now)  # heartbeats fresh: not the runs' sweep
    Host.objects.filter(pk=dead.pk).update(observer_token="dead", observed_at=now - timedelta(seconds=11))
    Host.objects.filter(pk=given_back.pk).update(observer_token="", observed_at=now - timedelta(seconds=2))
    Host.objects.filter(pk=alive.pk).update(observer_token="alive", observed_at=now - timedelta(seconds=2))
    assert sweeping.sweep(now) == 2
    tokens = dict(Host.objects.values_list("pk", "observer_token"))
    assert tokens[dead.pk] not in ("", "dead") and tokens[given_back.pk] != ""
    assert tokens[alive.pk] == "alive"
