from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs import teams
from jobs.models import Credential, Disk, Host, Membership, Team
from tests.test_safety import Lab, require_loop_devices


@pytest.fixture
def owner(db) -> User:
    user = User.objects.create_user("olga", password="a-long-test-password-1")
    teams.place_new_user(user)
    return user


@pytest.fixture
def team(owner) -> Team:
    return Membership.objects.get(user=owner).team


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def credential(team) -> Credential:
    credential = Credential(team=team, name="bench key", kind=Credential.Kind.PASSWORD)
    credential.set_secret("hunter2-canary-password")
    credential.save()
    return credential


@pytest.fixture
def host(team, credential) -> Host:
    return Host.objects.create(
        team=team, name="vm1", address="127.0.0.1", port=22, username="bench", credential=credential
    )


@pytest.fixture
def disk(host) -> Disk:
    return Disk.objects.create(
        host=host,
        label="data",
        target_path="/data/bench",
        disk_type="custom",
        spec_iops=4000,
        spec_bytes_per_s=100_000_000,
    )


@pytest.fixture
def fio_installed():
    if shutil.which("fio") is None:
        reason = "fio is not installed (apt-get install fio; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


from tests.browser import *  # noqa: E402, F403  (fixtures: browser, page, screenshot)
from tests.sshd import *  # noqa: E402, F403  (fixtures: sshd, sshd_target, sshd_factory, other_sshd)
from tests.workers import *  # noqa: E402, F403  (fixtures: broker, worker_factory, worker)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """Loop devices on files in tmp_path (root only; skips with the reason otherwise), detached afterwards."""
    require_loop_devices()
    lab = Lab(tmp_path)
    try:
        yield lab
    finally:
        lab.close()
