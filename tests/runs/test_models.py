from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from jobs.models import Disk, Profile, Run, Team
from jobs.presets import PRESETS
from tests.factories import HostFactory, RunFactory, ScheduleFactory


def test_a_disk_belongs_to_its_hosts_team(disk, team):
    assert disk.team == team


def test_a_run_belongs_to_its_disks_team_and_snapshots_the_profile_name(disk, team):
    profile = Profile.objects.get(name="SolidFire: 4k randread QD64")
    # Neither given: Run.save derives both.
    run = RunFactory(disk=disk, profile=profile, parameters=profile.parameters(), team=None, profile_name="")
    assert run.team == team
    assert run.profile_name == "SolidFire: 4k randread QD64"
    assert run.parameters["iodepth"] == 64
    assert run.state == Run.State.PENDING


def test_a_disk_can_hold_only_one_active_run(disk):
    RunFactory(disk=disk, running=True)
    RunFactory(disk=disk, succeeded=True)
    RunFactory(disk=disk, state=Run.State.PENDING)
    with pytest.raises(IntegrityError), transaction.atomic():
        RunFactory(disk=disk, state=Run.State.QUEUED)


def test_a_schedule_fire_creates_one_run_per_disk_and_profile(disk, team):
    from django.utils import timezone

    schedule = ScheduleFactory(team=team, name="nightly", cron="30 2 * * *")
    profile = Profile.objects.filter(builtin=True).first()
    fire = timezone.now().replace(microsecond=0)
    RunFactory(disk=disk, profile=profile, schedule=schedule, fire_time=fire, trigger="schedule")
    with pytest.raises(IntegrityError), transaction.atomic():
        RunFactory(disk=disk, profile=profile, schedule=schedule, fire_time=fire, trigger="schedule")


def test_host_names_are_unique_within_a_team_but_not_across_teams(host, team):
    with pytest.raises(IntegrityError), transaction.atomic():
        HostFactory(team=team, name="vm1", address="10.0.0.2", username="x")
    other = Team.objects.create(name="other")
    assert HostFactory(team=other, name="vm1", address="10.0.0.2", username="x").pk


def test_a_host_refuses_a_credential_of_another_team(host):
    other = Team.objects.create(name="other")
    host.team = other
    with pytest.raises(ValidationError) as info:
        host.full_clean()
    assert "credential" in info.value.message_dict


def test_a_disk_target_must_be_an_absolute_path(host):
    disk = Disk(host=host, label="rel", target_path="data/bench", disk_type="custom", spec_iops=1)
    with pytest.raises(ValidationError) as info:
        disk.full_clean()
    assert "target_path" in info.value.message_dict


def test_new_disks_are_not_destructive_by_default(disk):
    assert disk.allow_destructive is False


@pytest.mark.django_db
def test_every_field_workload_has_a_builtin_preset():
    # The built-in sweeps are built-in profiles too (tests/sets/test_sweep_presets.py): these are the single runs.
    builtins = {p.name: p for p in Profile.objects.filter(builtin=True, team=None) if not p.is_set}
    assert set(builtins) == {p["name"] for p in PRESETS}
    ultra = [p for p in builtins.values() if p.name.startswith("Ultra stripe")]
    assert sorted((p.rw, p.block_size_bytes) for p in ultra) == sorted(
        [
            ("randwrite", 4096),
            ("randwrite", 65536),
            ("randread", 4096),
            ("randread", 65536),
            ("write", 65536),
            ("read", 65536),
        ]
    )
    assert all(p.ioengine == "libaio" and p.direct and 64 <= p.iodepth <= 128 for p in ultra)
    latency = builtins["Latency: 4k randrw QD32 300 s"]
    assert (latency.rw, latency.iodepth, latency.runtime_s, latency.block_size_bytes) == ("randrw", 32, 300, 4096)
    essd = builtins["ESSD PL3: 4k randwrite numjobs=10 QD128"]
    assert (essd.jobs, essd.iodepth, essd.rw, essd.size_bytes) == (10, 128, "randwrite", None)
    for name in ("SolidFire: 4k randread QD64", "SolidFire: 4k randwrite QD64"):
        assert builtins[name].iodepth == 64
    ndisk = [p for p in builtins.values() if p.tool == "ndisk64"]
    assert sorted(p.pattern for p in ndisk) == ["random", "sequential"]
    assert all(p.jobs == 4 and p.read_percent == 50 and p.direct and p.size_bytes == 32 * 2**20 for p in ndisk)


@pytest.mark.django_db
def test_presets_are_restored_when_migrations_run_again():
    from django.core.management import call_command

    Profile.objects.filter(builtin=True, name="SolidFire: 4k randread QD64").update(iodepth=1)
    call_command("migrate", verbosity=0)
    assert Profile.objects.get(builtin=True, name="SolidFire: 4k randread QD64").iodepth == 64


def test_a_profile_refuses_fio_options_outside_the_allow_list(team):
    profile = Profile(team=team, name="sneaky", extra_options={"exec_prerun": "rm -rf /"})
    with pytest.raises(ValidationError) as info:
        profile.full_clean()
    assert "exec_prerun" in info.value.message_dict["extra_options"][0]


def test_a_profile_refuses_an_allowed_option_with_a_bad_value(team):
    profile = Profile(team=team, name="bad", extra_options={"group_reporting": "1\ninclude=/etc/passwd"})
    with pytest.raises(ValidationError):
        profile.full_clean()


def test_a_read_profile_does_not_write_and_a_mixed_one_does(team):
    assert Profile(rw="randread").writes is False
    assert Profile(rw="randrw").writes is True
    assert Profile(tool="ndisk64", read_percent=100).writes is False
    assert Profile(tool="ndisk64", read_percent=50).writes is True
