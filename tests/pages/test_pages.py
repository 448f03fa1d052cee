from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.models import Disk, Membership, Team
from jobs.teams.membership import DEFAULT_TEAM_NAME
from tests.factories import DiskFactory, HostFactory, RunFactory

PASSWORD = "a-long-test-password-1"


def _signup(client: Client, username: str):
    return client.post("/signup/", {"username": username, "password1": PASSWORD, "password2": PASSWORD})


@pytest.mark.django_db
def test_the_first_user_to_sign_up_owns_the_default_team():
    client = Client()
    response = _signup(client, "first")
    assert response.status_code == 302 and response["Location"] == "/"
    membership = Membership.objects.get(user__username="first")
    assert (membership.team.name, membership.role) == (DEFAULT_TEAM_NAME, "owner")
    assert DEFAULT_TEAM_NAME in client.get("/").content.decode()


@pytest.mark.django_db
def test_a_later_user_starts_in_a_team_of_their_own():
    _signup(Client(), "first")
    _signup(Client(), "second")
    membership = Membership.objects.get(user__username="second")
    assert membership.team.name == "second's team"
    assert membership.role == "owner"
    assert Team.objects.get(name=DEFAULT_TEAM_NAME).memberships.count() == 1


@pytest.mark.django_db
def test_a_bad_sign_up_names_the_field_and_creates_nothing():
    response = Client().post("/signup/", {"username": "x", "password1": PASSWORD, "password2": "different-1234"})
    assert response.status_code == 200
    assert "password fields didn" in response.content.decode()
    assert not User.objects.exists()


@pytest.mark.django_db
def test_login_and_logout_work():
    _signup(Client(), "first")
    client = Client()
    assert client.get("/").status_code == 302
    response = client.post("/login/", {"username": "first", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    client.post("/logout/")
    assert client.get("/")["Location"].startswith("/login/")


def test_the_home_page_lists_the_teams_hosts_and_disks_with_their_limits(owner_client, disk):
    page = owner_client.get("/").content.decode()
    assert "vm1" in page
    assert "/data/bench" in page
    assert "4,000 IOPS" in page
    assert "100 MB/s" in page and "95.4 MiB/s" not in page  # 100,000,000 B/s, typed in MB/s


def test_the_home_page_shows_nothing_of_another_team(owner_client, disk):
    rival = HostFactory(team__name="rivals", name="rival-host", address="10.9.9.9", username="r")
    DiskFactory(host=rival, label="rival-disk", target_path="/secret/path", spec_iops=1)
    page = owner_client.get("/").content.decode()
    assert "rival-host" not in page and "/secret/path" not in page


def test_a_disk_with_an_invalid_spec_shows_why_instead_of_breaking_the_page(owner_client, host):
    Disk.objects.create(host=host, label="odd", target_path="/x", disk_type="no-such-type", size=10)
    response = owner_client.get("/")
    assert response.status_code == 200
    assert "no-such-type" in response.content.decode()


def test_an_empty_team_is_told_what_to_do_next(owner_client):
    assert "No hosts yet" in owner_client.get("/").content.decode()


@pytest.mark.django_db
def test_the_health_endpoint_answers_without_login():
    assert Client().get("/healthz").json() == {"status": "ok"}


def test_the_home_page_shows_the_striped_ultra_field_workload_at_forty_thousand_iops(owner_client, host):
    Disk.objects.create(
        host=host, label="lvm-stripe", target_path="/dev/vg/stripe", kind="block", disk_type="alibaba-ultra",
        size=400, stripes=8,
    )  # fmt: skip
    page = owner_client.get("/").content.decode()
    assert "40,000 IOPS" in page
    assert "1,120 MB/s" in page and "1.04 GiB/s" not in page  # 8 x 140 MB/s, in the unit Alibaba publishes


def test_the_disk_types_page_shows_each_type_with_its_source(owner_client):
    page = owner_client.get("/disk-types/").content.decode()
    for type_id in ("alibaba-ultra", "aws-gp3", "azure-premium-ssd", "ibm-powervs-tier1", "solidfire-qos"):
        assert type_id in page
    assert "https://www.alibabacloud.com/help/en/ecs/user-guide/block-storage-performance" in page


def test_a_run_without_a_summary_shows_a_dash_not_an_error(owner_client, disk):
    RunFactory(disk=disk, running=True)
    page = owner_client.get(f"/disks/{disk.pk}/")
    assert page.status_code == 200
    assert "—" in page.content.decode()
