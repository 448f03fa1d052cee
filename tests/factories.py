"""factory_boy factories for the benchweb models, so that a test sets up only what it is about.

Every default makes an object that passes the model's validation, linked to the others as in real use (a
host's credential and a disk's host are of one team). Generated names ("host-3", "disk-7") never collide with
the names the fixtures and tests write by hand ("vm1", "data"). A test passes explicitly every value its
assertions depend on: defaults may change.

    DiskFactory(host=host)                            # a custom disk with no limits under /data
    DiskFactory(host=host, with_limits=True)          # ... with 4,000 IOPS and 100 MB/s, as the `disk` fixture
    RunFactory(disk=disk)                             # pending, no profile, nothing snapshotted
    RunFactory(disk=disk, succeeded=True, recorded=True)   # finished now with a fio summary, and its RunResult
    RunFactory(disk=disk, running=True)               # holds its disk (one active run per disk)
    RunFactory(disk=disk, failed=True)
    RunFactory(disk=disk, with_profile=True)          # a new profile of the disk's team, its parameters snapshotted
    Run.objects.bulk_create(RunFactory.build(disk=disk, ...) for ...)   # team and profile_name are set on build
    ScheduleFactory(team=team, targets=[disk], profiles=[quick, other])
    nightly_runs(disk, [4000, 3900, 2800], start=NIGHT_ONE, profile=quick)   # a history, one recorded run a night
"""

from __future__ import annotations

import random
import tempfile
from datetime import UTC, datetime, timedelta
from typing import Any

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from jobs.models import Credential, Disk, Host, Profile, Run, RunResult, Schedule, ScheduleProfile, Team

NIGHT_ONE = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)


def fio_summary(read_iops: float = 4000.0, write_iops: float | None = None, block_size: int = 4096) -> dict:
    """A canonical run summary as fio's parser makes it (the fields the pages and the chart read)."""

    def direction(iops: float | None) -> dict | None:
        if iops is None:
            return None
        clat = {"mean": 300.0, "max": 8000.0, "p50": 250.0, "p90": 400.0, "p95": 500.0, "p99": 900.0, "p99_9": 4200.0}
        return {"iops": iops, "bw_bytes_per_s": iops * block_size, "clat_us": clat}

    total = read_iops + (write_iops or 0.0)
    return {
        "tool": "fio", "tool_version": "fio-3.33", "total": {"iops": total, "bw_bytes_per_s": total * block_size},
        "read": direction(read_iops or None), "write": direction(write_iops), "processes": 1,
        "block_size_bytes": block_size, "read_percent": 100.0 * read_iops / total if total else 100.0,
        "direct": True, "runtime_s": 60.0,
    }  # fmt: skip


class TeamFactory(DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"team {n}")


class CredentialFactory(DjangoModelFactory):
    """A stored secret: `secret` (and `passphrase`) go through Credential.set_secret, so only ciphertext is kept."""

    class Meta:
        model = Credential

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"key {n}")
    kind = Credential.Kind.PASSWORD
    secret = factory.Sequence(lambda n: f"factory-password-{n}")
    passphrase = ""

    @classmethod
    def _build(cls, model_class: type[Credential], *args: Any, **kwargs: Any) -> Credential:
        secret, passphrase = kwargs.pop("secret"), kwargs.pop("passphrase")
        credential = model_class(*args, **kwargs)
        credential.set_secret(secret, passphrase)
        return credential

    @classmethod
    def _create(cls, model_class: type[Credential], *args: Any, **kwargs: Any) -> Credential:
        credential = cls._build(model_class, *args, **kwargs)
        credential.save()
        return credential


class HostFactory(DjangoModelFactory):
    """A Linux host at a documentation address (192.0.2.0/24, never reached), logging in with a password of
    its team. HostFactory.for_sshd(sshd) makes one a run can really use."""

    class Meta:
        model = Host

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"host-{n}")
    address = factory.Sequence(lambda n: f"192.0.2.{n % 254 + 1}")
    username = "bench"
    credential = factory.SubFactory(CredentialFactory, team=factory.SelfAttribute("..team"))

    @classmethod
    def for_sshd(cls, sshd: Any, **fields: Any) -> Host:
        """A host on a test sshd (tests/sshd.py): its private key stored, its host key approved, and a fresh run
        directory of its own."""
        key = sshd.host_key
        values = {
            "address": sshd.address, "port": sshd.port, "username": sshd.username, "host_key_type": key.key_type,
            "host_key_b64": key.key_b64, "host_key_fingerprint": key.fingerprint,
            "run_base_dir": tempfile.mkdtemp(prefix="benchweb-runs-"),
            "credential__kind": Credential.Kind.PRIVATE_KEY, "credential__secret": sshd.private_key,
        }  # fmt: skip
        return cls(**(values | fields))


class DiskFactory(DjangoModelFactory):
    """A directory disk of the `custom` type with no limits; with_limits=True gives it the `disk` fixture's."""

    class Meta:
        model = Disk

    host = factory.SubFactory(HostFactory)
    team = factory.LazyAttribute(lambda disk: disk.host.team)  # Disk.save sets it too; this is for build()
    label = factory.Sequence(lambda n: f"disk-{n}")
    target_path = factory.Sequence(lambda n: f"/data/bench-{n}")
    disk_type = "custom"

    class Params:
        with_limits = factory.Trait(spec_iops=4000, spec_bytes_per_s=100_000_000)


class ProfileFactory(DjangoModelFactory):
    """A team's fio random-read profile of 10 s on a 1 MiB file."""

    class Meta:
        model = Profile

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"profile {n}")
    tool = Profile.Tool.FIO
    rw = Profile.RW.RANDREAD
    runtime_s = 10
    size_bytes = 2**20


class ScheduleFactory(DjangoModelFactory):
    """A cron schedule at 02:30 UTC (kind="interval": every 60 minutes). targets=[disks] and
    profiles=[profiles] link it, the profiles run in that order."""

    class Meta:
        model = Schedule
        skip_postgeneration_save = True

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"schedule {n}")
    kind = Schedule.Kind.CRON
    cron = factory.LazyAttribute(lambda s: "30 2 * * *" if s.kind == Schedule.Kind.CRON else "")
    interval_minutes = factory.LazyAttribute(lambda s: 60 if s.kind == Schedule.Kind.INTERVAL else None)

    @factory.post_generation
    def targets(schedule: Schedule, create: bool, disks: list[Disk] | None, **kwargs: Any) -> None:
        if create and disks:
            schedule.targets.set(disks)

    @factory.post_generation
    def profiles(schedule: Schedule, create: bool, profiles: list[Profile] | None, **kwargs: Any) -> None:
        if create and profiles:
            for position, profile in enumerate(profiles):
                ScheduleProfile.objects.create(schedule=schedule, profile=profile, position=position)


class RunFactory(DjangoModelFactory):
    """A pending manual run on a new disk, with no profile: pass `disk` (and `profile`) to place it.

    Traits: succeeded (finished now after 60 s, with fio_summary()), running, failed, with_profile.
    recorded=True keeps the RunResult of a created succeeded run, as the services do when they store a summary.
    """

    class Meta:
        model = Run
        skip_postgeneration_save = True

    disk = factory.SubFactory(DiskFactory)
    team = factory.LazyAttribute(lambda run: run.disk.team)  # Run.save sets it too; bulk_create does not
    profile = None
    profile_name = factory.LazyAttribute(lambda run: run.profile.name if run.profile else "")
    state = Run.State.PENDING

    class Params:
        succeeded = factory.Trait(
            state=Run.State.SUCCEEDED,
            finished_at=factory.LazyFunction(timezone.now),
            started_at=factory.LazyAttribute(lambda run: run.finished_at - timedelta(seconds=60)),
            summary=factory.LazyFunction(fio_summary),
        )
        running = factory.Trait(
            state=Run.State.RUNNING,
            queued_at=factory.LazyFunction(timezone.now),
            started_at=factory.LazyAttribute(lambda run: run.queued_at),
            heartbeat_at=factory.LazyAttribute(lambda run: run.queued_at),
        )
        failed = factory.Trait(
            state=Run.State.FAILED,
            finished_at=factory.LazyFunction(timezone.now),
            started_at=factory.LazyAttribute(lambda run: run.finished_at - timedelta(seconds=60)),
            exit_status=1,
            explanation="fio exited with status 1",
        )
        with_profile = factory.Trait(
            profile=factory.SubFactory(ProfileFactory, team=factory.SelfAttribute("..disk.team")),
            parameters=factory.LazyAttribute(lambda run: run.profile.parameters()),
        )

    @factory.post_generation
    def recorded(run: Run, create: bool, record: bool | None, **kwargs: Any) -> None:
        if create and record:
            RunResult.record(run)


def nightly_runs(
    disk: Disk,
    iops: list[float],
    *,
    start: datetime = NIGHT_ONE,
    profile: Profile | None = None,
    profile_name: str = "4k randread",
    clat: dict | None = None,
    p99: list[float] | None = None,
) -> list[Run]:
    """One succeeded run a night from `start`, of total IOPS iops[i], recorded as a finished run is (RunResult).

    Under `profile` (its parameters snapshotted) when given, else under `profile_name` alone; `clat` replaces the
    read latencies, `p99` sets each night's read p99."""
    placed: dict[str, Any] = {"profile": profile, "parameters": profile.parameters()} if profile else {}
    runs = []
    for night, value in enumerate(iops):
        summary = fio_summary(read_iops=float(value))
        if clat:
            summary["read"]["clat_us"] = clat
        if p99:
            summary["read"]["clat_us"] = summary["read"]["clat_us"] | {"p99": p99[night]}
        finished = start + timedelta(days=night)
        runs.append(
            RunFactory(
                disk=disk, profile_name=profile.name if profile else profile_name, succeeded=True, summary=summary,
                started_at=finished - timedelta(seconds=60), finished_at=finished, recorded=True, **placed,
            )
        )  # fmt: skip
    return runs


def noisy(level: float, n: int, rng: random.Random, spread: float = 0.03) -> list[float]:
    """n values within ±spread of level (a history with a known truth)."""
    return [level * (1 + rng.uniform(-spread, spread)) for _ in range(n)]
