"""A latency-target search as one set of runs, without a worker: its first run unthrottled, each next step made
and claimed when the one before ends, within its most runs, ended with its answer; a failed step, a cancel, an
edited profile. Members end here through the state machine (states.finish) with the numbers a synthetic queue
would measure (p99 = base / (1 - rate / capacity)); the search with real fio is in test_sla_fio.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from jobs.models import Run, RunResult, RunSet
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.schedules import dispatcher
from jobs.sets import advancing, cancelling, requesting
from tests.factories import DiskFactory, ProfileFactory, ScheduleFactory
from tests.sets.sweeps import succeed

pytestmark = pytest.mark.django_db

CAPACITY, BASE_US = 20_000, 100.0


def sla_profile(team, **fields):
    defaults = {"team": team, "name": "p99 under 400 µs", "runtime_s": 2, "sla_percentile": "p99",
                "sla_target_us": 400, "sla_max_runs": 8}  # fmt: skip
    return ProfileFactory(**(defaults | fields))


def queue_measures(rate: int | None) -> tuple[float, float]:
    """What the synthetic device does at a rate cap (None: unthrottled): its IOPS and its p99."""
    if rate is None or rate >= CAPACITY:
        return CAPACITY * 0.99, 50 * BASE_US
    return float(rate), BASE_US / (1 - rate / CAPACITY)


def current(run_set: RunSet) -> Run:
    return run_set.members.order_by("-set_index").first()


def run_step(run_set: RunSet, capture) -> str:
    """End the set's current member as the queue measures it, then advance the set; the set's state after."""
    member = current(run_set)
    assert member.state == Run.State.QUEUED, member.explanation  # each step is claimed as it is made
    with capture():
        succeed(member, *queue_measures((member.set_point or {}).get("rate_iops")))
        return advancing.advance(run_set.pk)


def run_to_the_end(run_set: RunSet, capture) -> None:
    while run_step(run_set, capture) == RunSet.State.RUNNING:
        pass
    run_set.refresh_from_db()


def test_the_search_steps_from_an_unthrottled_run_and_ends_within_one_step_of_the_answer(
    django_capture_on_commit_callbacks,
):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_set(disk, sla_profile(disk.team))
    first = current(run_set)
    assert run_set.kind == RunSet.Kind.SLA and run_set.state == RunSet.State.RUNNING
    assert run_set.explanation == "running step 1 of at most 8"
    assert first.set_point == {} and "rate_iops" not in first.parameters["extra_options"]
    assert run_set.plan == {"percentile": "p99", "target_us": 400, "max_runs": 8, "lowest_iops": None,
                            "step_fraction": 0.05, "seconds_per_step": 2, "total_s": 16}  # fmt: skip

    while run_step(run_set, django_capture_on_commit_callbacks) == RunSet.State.RUNNING:
        run_set.refresh_from_db()
        step = current(run_set)
        # The rate goes to fio as its cap, and the set says which step runs.
        assert step.parameters["extra_options"]["rate_iops"] == str(step.set_point["rate_iops"])
        assert run_set.explanation == f"running step {step.set_index + 1} of at most 8"

    run_set.refresh_from_db()
    steps = run_set.result["steps"]
    assert run_set.state == RunSet.State.SUCCEEDED, run_set.explanation
    assert 3 <= len(steps) <= 8
    assert steps[0]["rate_iops"] is None and steps[0]["verdict"] == "over target"
    assert steps[1]["rate_iops"] == round(CAPACITY * 0.99 / 20)  # the lowest rate: a twentieth of the highest
    # The true answer: 100 / (1 - r / 20,000) = 400 at r = 15,000; found below it, within one step (5 % of the range).
    answer = run_set.result["answer"]
    assert 15_000 - 0.05 * (CAPACITY * 0.99 - 990) <= answer["iops"] <= 15_000
    assert answer["latency_us"] <= 400 and answer["percentile"] == "p99" and answer["target_us"] == 400
    assert answer["run"] == next(s["run"] for s in steps if s["rate_iops"] == answer["rate_iops"])
    assert run_set.result["answer_text"] == f"{answer['iops']:,.0f} IOPS at p99 ≤ 400 µs"
    assert run_set.explanation == f"finished in {len(steps)} steps: {run_set.result['answer_text']}"
    assert [s["index"] for s in steps] == list(range(len(steps)))
    # The answer's run stands for the search on the disk's charts, under a series of its own; no other step does.
    recorded = RunResult.objects.get(run__run_set=run_set)
    assert (recorded.run_id, recorded.profile_name) == (answer["run"], "p99 under 400 µs · p99 ≤ 400 µs")


def test_the_search_stops_at_its_most_runs_with_the_best_rate_that_met(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team, sla_max_runs=3))
    run_to_the_end(run_set, django_capture_on_commit_callbacks)

    assert run_set.members.count() == 3
    answer = run_set.result["answer"]
    assert answer["why"].startswith("out of runs after 3")
    assert answer["iops"] == max(s["iops"] for s in run_set.result["steps"] if s["verdict"] == "met")
    assert answer["within_iops"] > 0


def test_a_target_no_rate_meets_ends_the_search_saying_what_the_lowest_rate_measured(
    django_capture_on_commit_callbacks,
):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team, sla_target_us=50))
    run_to_the_end(run_set, django_capture_on_commit_callbacks)

    assert run_set.state == RunSet.State.SUCCEEDED and run_set.result["answer"]["iops"] is None
    assert run_set.result["answer_text"].startswith("none met: at the lowest rate, 990 IOPS, p99 was 105 µs")


def test_a_failed_step_ends_the_search_failed_naming_the_step(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team))
    run_step(run_set, django_capture_on_commit_callbacks)
    second = current(run_set)

    with django_capture_on_commit_callbacks():
        states.finish(second, Run.State.FAILED, "fio aborted")
        assert advancing.advance(run_set.pk) == RunSet.State.FAILED

    run_set.refresh_from_db()
    assert run_set.explanation == "failed at step 2 (capped at 990 IOPS): it ended failed: fio aborted"
    assert [s["state"] for s in run_set.result["steps"]] == ["succeeded", "failed"]
    assert run_set.result["answer"] is None and run_set.members.count() == 2


def test_cancelling_a_search_stops_its_step_and_makes_no_other(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team))
    run_step(run_set, django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks():
        run_set = cancelling.cancel(run_set)

    assert run_set.state == RunSet.State.CANCELLED and run_set.explanation == "cancelled after 2 steps"
    assert [m.state for m in run_set.members.order_by("set_index")] == ["succeeded", "cancelled"]
    assert run_set.result["steps"][0]["iops"] == CAPACITY * 0.99  # the finished step keeps its numbers


def test_the_search_holds_its_disk_between_steps_and_hands_it_on_at_its_end(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team, sla_max_runs=2))
        other = queueing.request_run(disk, ProfileFactory(team=disk.team))
    with django_capture_on_commit_callbacks():
        succeed(current(run_set), *queue_measures(None))
        queueing.dispatch_due()  # the tick between two steps claims nothing
    other.refresh_from_db()
    assert other.state == Run.State.PENDING
    assert other.explanation == f"waiting: disk held by latency-target search {run_set.pk} until its last point ends"

    with django_capture_on_commit_callbacks():
        assert advancing.advance(run_set.pk) == RunSet.State.RUNNING  # step 2 made, and claimed before the other
    other.refresh_from_db()
    assert other.state == Run.State.PENDING
    assert run_step(run_set, django_capture_on_commit_callbacks) == RunSet.State.SUCCEEDED
    other.refresh_from_db()
    assert other.state == Run.State.QUEUED


def test_the_tick_makes_the_next_step_when_the_advance_was_lost(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team))
    succeed(current(run_set), *queue_measures(None))  # no on-commit callbacks run: the advance message is lost

    with django_capture_on_commit_callbacks():
        advancing.advance_stalled()

    assert run_set.members.count() == 2 and current(run_set).state == Run.State.QUEUED


def test_a_profile_edited_during_the_search_ends_it(django_capture_on_commit_callbacks):
    disk = DiskFactory()
    profile = sla_profile(disk.team)
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, profile)
    profile.iodepth = 32
    profile.save()

    assert run_step(run_set, django_capture_on_commit_callbacks) == RunSet.State.FAILED
    run_set.refresh_from_db()
    assert "was edited during the search" in run_set.explanation and run_set.members.count() == 1


def test_a_mixed_job_of_several_jobs_gets_its_rate_shared_out_per_job_and_direction():
    profile = ProfileFactory.build(rw="randrw", read_percent=70, jobs=4, sla_target_us=1000)

    assert profile.at_point({"rate_iops": 4000}).parameters()["extra_options"] == {"rate_iops": "700,300"}
    assert ProfileFactory.build(jobs=3).at_point({"rate_iops": 1000}).extra_options == {"rate_iops": "334"}
    assert not profile.at_point({}).is_sla


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"sweep_axes": {"iodepth": "1,4"}}, "sla_target_us", "never two"),
        ({"tool": "ndisk64", "extra_options": {}}, "sla_target_us", "ndisk64 has no rate cap"),
        ({"extra_options": {"rate_iops": "500"}}, "extra_options", "remove rate_iops"),
    ],
)
def test_a_search_profile_is_refused_at_save_when_it_cannot_step_its_rate(fields, field, message):
    profile = ProfileFactory.build(sla_target_us=1000, **fields)
    with pytest.raises(ValidationError) as refused:
        profile.clean()
    assert message in " ".join(refused.value.message_dict[field])


def test_a_search_is_refused_as_a_single_run_and_beyond_the_teams_bound():
    disk = DiskFactory()
    with pytest.raises(RunRefused, match="is a latency-target search: start it as one"):
        queueing.request_run(disk, sla_profile(disk.team))
    disk.team.sweep_bound_s = 60
    disk.team.save()
    with pytest.raises(RunRefused, match=r"takes up to 4 min \(8 runs × 30 s\), .* it fits with at most 2 runs"):
        requesting.request_sla(disk, sla_profile(disk.team, name="long", runtime_s=30))
    assert not Run.objects.exists() and not RunSet.objects.exists()


def test_a_fire_of_a_search_profile_makes_one_search_once_with_its_first_run_at_its_slot(team, host):
    disk = DiskFactory(host=host)
    profile = sla_profile(team, runtime_s=10)
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = ScheduleFactory(team=team, targets=[disk], profiles=[profile], kind="interval", interval_minutes=60,
                               starts_at=start)  # fmt: skip

    dispatcher.materialise(start + timedelta(seconds=1))
    dispatcher.fire(schedule, start, start + timedelta(seconds=2))  # offered again: nothing twice

    run_set = RunSet.objects.get(schedule=schedule)
    assert (run_set.kind, run_set.trigger, run_set.fire_time) == (RunSet.Kind.SLA, "schedule", start)
    assert [(m.set_point, m.not_before) for m in run_set.members.all()] == [({}, start)]
    assert not Run.objects.filter(schedule=schedule, run_set__isnull=True).exists()
    # The schedule's plan counts the search's most runs.
    assert dispatcher.sequence_seconds([profile]) == 8 * dispatcher.sequence_seconds([ProfileFactory(runtime_s=10)])


def test_the_pages_of_a_search_and_of_its_steps_open_while_it_runs_and_once_it_ended(
    owner_client, disk, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_sla(disk, sla_profile(disk.team, sla_max_runs=3))
    run_step(run_set, django_capture_on_commit_callbacks)
    step = current(run_set)
    rate = step.set_point["rate_iops"]

    for address in (f"/sets/{run_set.pk}/", f"/sets/{run_set.pk}/series.json", f"/runs/{step.pk}/"):
        assert owner_client.get(address).status_code == 200, address
    assert f"rate_iops {rate}" in owner_client.get(f"/runs/{step.pk}/").content.decode()

    run_to_the_end(run_set, django_capture_on_commit_callbacks)
    page = owner_client.get(f"/sets/{run_set.pk}/")
    assert page.status_code == 200 and run_set.explanation in page.content.decode()
    assert f'<p id="set-answer"><strong>{run_set.result["answer_text"]}</strong>' in page.content.decode()
    assert f"<h1>Latency-target search {run_set.pk} " in page.content.decode()
    assert owner_client.get(f"/sets/{run_set.pk}/series.json").status_code == 200
