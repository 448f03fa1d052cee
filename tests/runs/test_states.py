"""The run state machine (jobs/runs/states.py): the moves it declares, and what it refuses."""

from __future__ import annotations

import pytest

from jobs.models import Run
from jobs.runs import states
from tests.factories import RunFactory

State = Run.State


def test_every_unfinished_state_may_end_and_no_final_state_may_move():
    assert set(states.MOVES) == {State.PENDING, *Run.ACTIVE_STATES}
    for moves in states.MOVES.values():
        assert set(Run.FINAL_STATES) <= set(moves)
    assert not set(Run.FINAL_STATES) & set(states.MOVES)


@pytest.mark.django_db
def test_a_move_it_does_not_declare_raises_and_changes_nothing():
    run = RunFactory(running=True)
    with pytest.raises(ValueError, match="cannot move from running to queued"):
        states.move(run, (State.RUNNING,), State.QUEUED)
    with pytest.raises(ValueError, match="cannot move from succeeded to running"):
        states.move_all(Run.objects.all(), (State.SUCCEEDED,), State.RUNNING)
    assert Run.objects.get(pk=run.pk).state == State.RUNNING


@pytest.mark.django_db
def test_a_declared_move_moves_only_runs_in_the_states_it_leaves():
    pending, running = RunFactory(), RunFactory(running=True)
    assert states.move_all(Run.objects.all(), (State.PENDING,), State.CANCELLED, explanation="stopped") == 1
    assert Run.objects.get(pk=pending.pk).state == State.CANCELLED
    assert Run.objects.get(pk=running.pk).state == State.RUNNING


@pytest.mark.django_db
def test_a_move_rereads_the_run_and_keeps_its_loaded_disk_and_host(django_assert_num_queries):
    """A step reads its run's disk and host once (select_related): a state move re-reads the run's own columns and
    keeps them, as long as the run still points at them."""
    made = RunFactory(running=True)
    Run.objects.filter(pk=made.pk).update(explanation="changed elsewhere")
    run = Run.objects.select_related("disk__host").get(pk=made.pk)
    assert states.move(run, (State.RUNNING,), State.COLLECTING, explanation="collecting")
    assert run.state == State.COLLECTING and run.heartbeat_at is not None
    with django_assert_num_queries(0):
        assert run.disk.host.name == made.disk.host.name
    other = RunFactory()
    Run.objects.filter(pk=run.pk).update(disk=other.disk)  # not a product move: the row points elsewhere now
    run.reread()
    with django_assert_num_queries(1):
        assert run.disk.pk == other.disk.pk  # the old disk is not kept for the new id
