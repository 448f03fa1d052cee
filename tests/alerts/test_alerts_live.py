"""Alerts from real events: a run that fails against the test sshd (a real Celery worker over a real Redis, real
fio), resolved by the next run that succeeds; a host key refused on a real SSH connection, resolved by approving
the key the host now presents, or by the host presenting the approved key again (a login, the sweep's key scan)."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEvent
from jobs import sessions
from jobs.alerts import evaluate
from jobs.hosts import connecting
from jobs.models import Alert, Disk, Host, Membership, Run
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
    # One run_failed alert; the succeeded run's own verdict (a small buffered file: cache suspected) is another kind.
    assert Alert.objects.filter(kind=Alert.Kind.RUN_FAILED).count() == 1
    assert set(Alert.objects.exclude(kind=Alert.Kind.RUN_FAILED).values_list("kind", flat=True)) <= {"run_verdict"}


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


def key_alert_opened_by(host: Host) -> Alert:
    assert not connecting.connection_test(host).ok
    alert = Alert.objects.get(kind="host_key_changed", host=host)
    assert alert.state == "open"
    return alert


def point_at(host: Host, port: int) -> Host:
    Host.objects.filter(pk=host.pk).update(port=port)
    host.refresh_from_db()
    return host


def test_a_host_pointed_back_at_its_sshd_resolves_host_key_changed_at_its_next_successful_connection_test(
    sshd, other_sshd
):
    _, host = team_with_host(sshd)
    alert = key_alert_opened_by(point_at(host, other_sshd.port))

    tested = connecting.connection_test(point_at(host, sshd.port))
    assert tested.ok, tested.message
    alert.refresh_from_db()
    assert alert.state == "resolved"
    assert alert.resolution == (
        f"loopback presented the approved key {sshd.host_key.fingerprint} again during a connection test"
    )


def test_a_workers_login_with_the_approved_key_resolves_host_key_changed(sshd, other_sshd):
    _, host = team_with_host(sshd)
    alert = key_alert_opened_by(point_at(host, other_sshd.port))
    try:
        with connecting.session(point_at(host, sshd.port)) as conn:
            assert conn.run("true").exit_status == 0
    finally:
        sessions.POOL.close_all()
    alert.refresh_from_db()
    assert alert.state == "resolved" and "again during a worker's login" in alert.resolution


def test_the_sweep_resolves_host_key_changed_once_the_host_presents_the_approved_key_again(sshd, other_sshd):
    _, host = team_with_host(sshd)
    alert = key_alert_opened_by(point_at(host, other_sshd.port))
    evaluate.sweep()
    alert.refresh_from_db()
    assert alert.state == "open"  # still the other key: the sweep's scan sees it and leaves the alert open

    point_at(host, sshd.port)
    evaluate.sweep()
    alert.refresh_from_db()
    assert alert.state == "resolved"
    assert alert.resolution.endswith("again during the alerts sweep's key check")


def test_the_owner_approving_the_changed_key_on_the_host_page_resolves_host_key_changed_with_the_audit_event(
    sshd, other_sshd
):
    team, host = team_with_host(sshd)
    owner = User.objects.create_user("olga", password="a-long-test-password-1")
    Membership.objects.create(user=owner, team=team, role="owner")
    client = Client()
    client.force_login(owner)
    alert = key_alert_opened_by(point_at(host, other_sshd.port))

    page = client.post(f"/hosts/{host.pk}/scan-key", follow=True).content.decode()
    assert "DIFFERENT key" in page and other_sshd.host_key.fingerprint in page
    client.post(f"/hosts/{host.pk}/approve-key", {"fingerprint": other_sshd.host_key.fingerprint})
    alert.refresh_from_db()
    assert alert.state == "resolved"
    assert alert.resolution == f"a key was approved: {other_sshd.host_key.fingerprint}"
    approved = AuditEvent.objects.get(action=AuditEvent.Action.HOST_KEY_APPROVED)
    assert approved.actor == owner
    assert approved.details["fingerprint"] == other_sshd.host_key.fingerprint
    assert approved.details["replaced"] == sshd.host_key.fingerprint
