"""The built-in sweeps are built-in profiles, synced from jobs/presets.py SWEEP_PRESETS as the other presets are,
each a valid sweep whose points and time the Run now form and the plan show."""

from __future__ import annotations

import pytest

from jobs import presets
from jobs.models import Disk, Profile
from jobs.tools import sweep_plan
from tests.factories import DiskFactory, ProfileFactory

pytestmark = pytest.mark.django_db


def test_every_built_in_sweep_is_a_built_in_profile_with_its_axes_and_passes_the_profile_checks():
    names = [sweep["name"] for sweep in presets.SWEEP_PRESETS]
    stored = {p.name: p for p in Profile.objects.filter(builtin=True, name__in=names)}
    assert sorted(stored) == sorted(names)
    counts = {}
    for sweep in presets.SWEEP_PRESETS:
        profile = stored[sweep["name"]]
        assert profile.is_sweep and profile.sweep_axes == sweep["axes"]
        profile.full_clean()
        counts[sweep["name"]] = profile.sweep().count
    assert sorted(counts.values()) == [3, 9, 12, 56]


def test_a_built_in_sweep_is_refused_whole_by_the_disk_that_refuses_one_of_its_points():
    ndisk = Profile.objects.get(builtin=True, name="ndisk64: 4k random 50/50, 1/2/4 processes")
    device = DiskFactory(kind=Disk.Kind.BLOCK, target_path="/dev/vdb", allow_destructive=False)

    refusal = device.refusal_for(ndisk)

    assert refusal is not None and refusal.short == "point 1: destructive: disk not marked for destructive writes"
    assert refusal.message.startswith(
        "point 1 of 3 (processes (-M) 1) is refused, so the whole sweep is, and nothing was started: it writes"
    )
    Disk.objects.filter(pk=device.pk).update(allow_destructive=True)
    device.refresh_from_db()
    assert device.refusal_for(ndisk) is None
    assert sweep_plan.plan_text(ndisk.sweep()) == "3 points × 1 min = 3 min"


def test_a_sweeps_axes_keep_their_order_once_stored(team):
    """PostgreSQL's jsonb sorts an object's keys, shorter first: stored as an object, these axes would come back
    iodepth first, and the outer axis would change. They are stored as pairs, in their order."""
    axes = {"block_size_bytes": "4k,64k", "iodepth": "1,4"}
    profile = Profile.objects.create(team=team, name="bs x qd", size_bytes=2**20, sweep_axes=axes)

    stored = Profile.objects.get(pk=profile.pk)

    assert list(stored.sweep_axes.items()) == list(axes.items())
    assert stored.sweep().points[:2] == [
        {"block_size_bytes": 4096, "iodepth": 1},
        {"block_size_bytes": 4096, "iodepth": 4},
    ]
    assert Profile.objects.get(pk=ProfileFactory(team=team).pk).sweep_axes == {}
