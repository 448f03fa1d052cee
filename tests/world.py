"""A team's world through the API: its owner, a host with a credential, a disk, a profile, a schedule, a
finished run and an API token, made by make_world (tests of isolation make two), and the calls tests make with
a token."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from jobs.api.models import ApiToken
from jobs.models import Credential, Disk, Host, Membership, Profile, Run, RunSample, Schedule, Team
from tests.factories import (
    CredentialFactory,
    DiskFactory,
    HostFactory,
    ProfileFactory,
    RunFactory,
    ScheduleFactory,
    TeamFactory,
)

CANARY_PASSWORD = "hunter2-canary-password"


SUMMARY = {"tool": "fio", "total": {"iops": 3900.0, "bw_bytes_per_s": 15974400.0}, "read": {"iops": 3900.0}}


@dataclass
class World:
    """One team with one of everything, and a client per role holding a token of that team."""

    team: Team
    owner: User
    credential: Credential
    host: Host
    disk: Disk
    profile: Profile
    schedule: Schedule
    run: Run
    token: ApiToken
    membership: Membership

    def ids(self) -> dict[str, int]:
        return {
            "hosts": self.host.pk, "disks": self.disk.pk, "profiles": self.profile.pk, "schedules": self.schedule.pk,
            "runs": self.run.pk, "tokens": self.token.pk, "members": self.membership.pk, "teams": self.team.pk,
        }  # fmt: skip


def client_for(secret: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def make_world(name: str, password: str = CANARY_PASSWORD) -> tuple[World, str]:
    owner = User.objects.create_user(f"{name}-owner", email=f"{name}@example.com")
    team = TeamFactory(name=name)
    membership = Membership.objects.create(user=owner, team=team, role=Membership.Role.OWNER)
    credential = CredentialFactory(team=team, name="login", kind=Credential.Kind.PASSWORD, secret=password)
    host = HostFactory(team=team, name="vm", address="127.0.0.1", port=1, username="bench", credential=credential)
    disk = DiskFactory(host=host, label="data", target_path="/data", spec_iops=4000, spec_bytes_per_s=100_000_000)
    profile = ProfileFactory(team=team, name="mine", rw="randread", runtime_s=5, size_bytes=2**20)
    schedule = ScheduleFactory(team=team, name="nightly", cron="30 2 * * *", targets=[disk], profiles=[profile])
    now = timezone.now()
    run = RunFactory(disk=disk, profile=profile, succeeded=True, summary=SUMMARY,
                     started_at=now - timedelta(seconds=5), finished_at=now, recorded=True)  # fmt: skip
    RunSample.objects.bulk_create(RunSample(run=run, t_s=t, read_iops=3900.0 + t) for t in range(3))
    token, secret = ApiToken.issue(owner, team, "tests")
    world = World(team, owner, credential, host, disk, profile, schedule, run, token, membership)
    return world, secret


def add_member(world: World, role: str) -> tuple[User, Client]:
    user = User.objects.create_user(f"{world.team.name}-{role}", email=f"{role}@{world.team.name}.example")
    Membership.objects.create(user=user, team=world.team, role=role)
    _, secret = ApiToken.issue(user, world.team, role)
    return user, client_for(secret)


def post(client: Client, url: str, data: object = None, method: str = "post"):
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, json.dumps(data or {}), content_type="application/json")
