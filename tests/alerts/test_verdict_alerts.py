"""The run_verdict alert (issue 33): raised when the last judged run of a workload on a disk has a verdict against
its number, naming it; not for "throttled at the promise" (the cloud's cap, expected); resolved by the next judged
run that has none; off when the team turns the kind off."""

from __future__ import annotations

import pytest
from django.utils import timezone

from jobs.alerts import evaluate
from jobs.models import Alert, AlertRule, Run
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db

Kind = Alert.Kind
CLIENT_BOUND = {"kind": "client_bound", "text": "client-bound: CPU 1 was 99 % busy for 58 of 60 s while …",
                "evidence": {}}  # fmt: skip
THROTTLED = {"kind": "throttled_at_promise", "text": "throttled at the promise: …", "evidence": {}}


def _judged(disk, verdicts, profile_name="4k randread") -> Run:
    run = RunFactory(disk=disk, profile_name=profile_name, succeeded=True, finished_at=timezone.now(),
                     verdicts=verdicts)  # fmt: skip
    evaluate.run_finished(run.pk)
    return run


def test_a_verdict_against_the_number_alerts_and_the_next_clean_run_resolves_it(disk):
    first = _judged(disk, [CLIENT_BOUND])
    alert = Alert.objects.get(kind=Kind.RUN_VERDICT)
    assert alert.state == Alert.State.OPEN and list(alert.runs.values_list("pk", flat=True)) == [first.pk]
    assert alert.title == f"Not the disk's number? 4k randread on {disk}"
    assert alert.summary == f"Run #{first.pk}: {CLIENT_BOUND['text']}"
    _judged(disk, [])
    alert.refresh_from_db()
    assert alert.state == Alert.State.RESOLVED


def test_throttled_at_the_promise_and_runs_not_judged_do_not_alert(disk):
    _judged(disk, [THROTTLED])
    _judged(disk, None, profile_name="not judged")
    assert not Alert.objects.filter(kind=Kind.RUN_VERDICT).exists()


def test_a_team_that_turned_the_kind_off_gets_none(disk):
    AlertRule.objects.create(team=disk.team, kind=Kind.RUN_VERDICT, enabled=False)
    _judged(disk, [CLIENT_BOUND])
    assert not Alert.objects.filter(kind=Kind.RUN_VERDICT).exists()
