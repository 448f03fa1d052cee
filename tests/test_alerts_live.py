"""Alerts from real events: a run that fails against the test sshd (a real Celery worker over a real Redis, real
fio), resolved by the next run that succeeds; a host key refused on a real SSH connection, resolved by approving
the key the host now presents."""

from __future__ import annotations

import time

import pytest

from jobs.hosts import connecting
from jobs.models import Alert, Disk, Run
from jobs.runs import queueing
from tests.builders import quick_profile, team_with_host, wait_final

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def wait_alert(timeout: float = 20, **fields) -> Alert:
    """The alert the worker makes right after the run's commit, a moment after the run reads final."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = Alert.objects.filter(**fields).first()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no alert with {fields}; there are {list(Alert.objects.values('kind', 'state'))}")


def test_a_run_refused_on_the_test_sshd_opens_run_failed_and_the_next_successful_run_resolves_it(
    fio_installed, sshd, worker, tmp_path
):
    team, host = team_with_host(sshd)
    target = tmp_path / "bench"  # not made yet: a writing run is refused before anything is written
    disk = Disk.objects.create(host=host, label="tmp", target_path=str(target), disk_type="custom")
    profile = quick_profile(team, rw="randwrite")
    failed = wait_final(queueing.request_run(disk, profile))
    assert failed.state == Run.State.ERROR, failed.explanation
    alert = wait_alert(kind="run_failed", state="open")
    assert alert.disk == disk and alert.profile_name == profile.name
    assert list(alert.runs.all()) == [failed]
    assert f"Run #{failed.pk} ended error" in alert.summary and str(target) in alert.summary

    target.mkdir()
    succeeded = wait_final(queueing.request_run(disk, profile))
    assert succeeded.state == Run.State.SUCCEEDED, succeeded.explanation
    resolved = wait_alert(pk=alert.pk, state="resolved")
    assert resolved.resolution.startswith(f"run #{succeeded.pk} of {profile.name} succeeded at ")
    assert Alert.objects.count() == 1


def test_a_connection_to_a_host_presenting_another_key_opens_host_key_changed_and_approving_resolves_it(
    sshd, other_sshd
):
    _, host = team_with_host(sshd, port=other_sshd.port)  # the approved key is sshd's; other_sshd answers
    tested = connecting.connection_test(host)
    assert not tested.ok and other_sshd.host_key.fingerprint in tested.message
    again = connecting.connection_test(host)
    assert not again.ok
    alert = Alert.objects.get(kind="host_key_changed")
    assert alert.state == "open" and alert.host == host
    assert other_sshd.host_key.fingerprint in alert.summary and sshd.host_key.fingerprint in alert.summary
    assert Alert.objects.filter(kind="host_key_changed").count() == 1  # tested twice: one alert

    key = connecting.scan_host_key(host)
    connecting.approve_host_key(host, None, key.fingerprint)
    alert.refresh_from_db()
    assert alert.state == "resolved" and key.fingerprint in alert.resolution
    # The approved key now passes (other_sshd has other users' keys, so its login is what refuses now), and
    # nothing opens the alert again.
    assert "refused the login" in connecting.connection_test(host).message
    assert Alert.objects.get().state == "resolved"
