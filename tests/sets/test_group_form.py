"""The Run as a group page (/sets/group/new/): single-run profiles only, the team's disks grouped by host, a group
started and the group's page next; every refusal on the form naming the member and the fix, with nothing written;
viewers look only. Its look at 390 and 1280 px in Chromium is in test_group_form_browser.py."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs import presets
from jobs.models import Disk, Membership, Profile, Run, RunSet
from tests.factories import DiskFactory, HostFactory, ProfileFactory
from tests.sets.sweeps import members, sweep_profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(team):
    """Three disks of the team, a and b on db-1 and c on db-2, and a quick profile beside a sweep."""
    first, second = HostFactory(team=team, name="db-1"), HostFactory(team=team, name="db-2")
    disks = [
        DiskFactory(host=first, label="a"),
        DiskFactory(host=first, label="b"),
        DiskFactory(host=second, label="c"),
    ]
    return disks, ProfileFactory(team=team, name="quick", size_bytes=2**20), sweep_profile(team)


def test_the_form_offers_single_run_profiles_and_the_teams_disks_by_host(owner_client, lab):
    _, quick, sweep = lab
    DiskFactory(label="theirs")  # another team's

    page = html.unescape(owner_client.get(f"/sets/group/new/?profile={quick.pk}").content.decode())

    assert f'<option value="{quick.pk}" selected>' in page and f'value="{sweep.pk}"' not in page
    assert page.index("db-1") < page.index("> a<") < page.index("> b<") < page.index("db-2") < page.index("> c<")
    assert "theirs" not in page and "0 chosen" in page
    assert 'href="/sets/group/new/"' in owner_client.get("/profiles/").content.decode()
    # Without ?profile, it starts on the built-in quick check, as Run now does.
    quick_check = Profile.objects.get(team=None, name=presets.QUICK_CHECK)
    assert f'<option value="{quick_check.pk}" selected>' in owner_client.get("/sets/group/new/").content.decode()


def test_a_group_started_from_the_form_leads_to_its_page_with_members_in_the_order_listed(
    owner_client, lab, django_capture_on_commit_callbacks
):
    disks, quick, _ = lab
    with django_capture_on_commit_callbacks():
        response = owner_client.post("/sets/group/new/", {"profile": quick.pk, "disks": [disks[2].pk, disks[0].pk],
                                                          "cap_iops": "50000", "cap_mb_s": ""})  # fmt: skip

    run_set = RunSet.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/sets/{run_set.pk}/"
    assert run_set.kind == RunSet.Kind.GROUP and run_set.trigger == "manual"
    assert run_set.plan == {"disks": [disks[0].pk, disks[2].pk], "cap_iops": 50000.0}
    assert [m.state for m in members(run_set)] == ["queued", "queued"]


def test_every_refusal_is_shown_on_the_form_naming_the_member_and_nothing_is_written(owner_client, lab, team):
    disks, quick, sweep = lab
    raw = DiskFactory(host=HostFactory(team=team, name="db-3"), label="raw", kind=Disk.Kind.BLOCK,
                      target_path="/dev/vdb", allow_destructive=False)  # fmt: skip
    writer = ProfileFactory(team=team, name="writes", rw="randwrite", size_bytes=2**20)
    refusals = [
        ({"profile": quick.pk, "disks": [disks[0].pk]}, "disks", "A group has 2 to 100 members, one a disk; 1 was"),
        ({"profile": sweep.pk, "disks": [disks[0].pk, disks[2].pk]}, "profile", "Select a valid choice"),
        ({"profile": writer.pk, "disks": [disks[2].pk, raw.pk]}, "disks",
         "Member 2 (disk raw on host db-3) is refused, so the whole group is, and nothing was started"),
        ({"profile": quick.pk, "disks": [disks[0].pk, disks[2].pk], "cap_iops": "0"}, "cap_iops", "above 0"),
        ({"profile": quick.pk, "disks": [disks[0].pk, DiskFactory(label="theirs").pk]}, "disks", "valid choice"),
    ]  # fmt: skip
    for data, field, words in refusals:
        response = owner_client.post("/sets/group/new/", data)

        assert response.status_code == 200
        errors = response.context["form"].errors
        assert words in " ".join(errors.get(field, [])), (data, errors)
        assert "Nothing was started" in response.content.decode()
        assert not RunSet.objects.exists() and not Run.objects.exists()


def test_a_viewer_sees_the_form_but_cannot_start_a_group(lab, team):
    disks, quick, _ = lab
    viewer = User.objects.create_user("vera")
    Membership.objects.create(user=viewer, team=team, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    assert "You are a viewer in this team" in client.get("/sets/group/new/").content.decode()
    response = client.post("/sets/group/new/", {"profile": quick.pk, "disks": [disks[0].pk, disks[2].pk]})
    assert response.status_code == 403 and not RunSet.objects.exists()


def test_the_form_offers_a_group_size_sweep_with_its_sizes(owner_client, lab):
    page = html.unescape(owner_client.get("/sets/group/new/").content.decode())

    assert 'name="as_sizes"' in page and "As a group-size sweep (1, 2, 4, … members)" in page
    assert 'name="sizes"' in page and 'placeholder="1,2,4"' in page and ">Start the group</button>" in page


@pytest.mark.parametrize(("sizes", "planned"), [("", [1, 2, 3]), (" 1, 3 ", [1, 3])], ids=["default", "typed"])
def test_a_group_size_sweep_started_from_the_form_leads_to_its_page(
    owner_client, lab, sizes, planned, django_capture_on_commit_callbacks
):
    disks, quick, _ = lab
    data = {"profile": quick.pk, "disks": [d.pk for d in reversed(disks)], "as_sizes": "on", "sizes": sizes}
    with django_capture_on_commit_callbacks():
        response = owner_client.post("/sets/group/new/", data)

    run_set = RunSet.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/sets/{run_set.pk}/"
    assert run_set.kind == RunSet.Kind.GROUP_SIZES and run_set.trigger == "manual"
    assert run_set.plan == {"disks": [d.pk for d in disks], "sizes": planned}
    assert len(members(run_set)) == sum(planned) and members(run_set)[0].state == "queued"
    assert "Group-size sweep" in owner_client.get(response["Location"]).content.decode()


def test_every_refusal_of_a_group_size_sweep_is_shown_on_its_field_with_the_choices_kept(owner_client, lab, team):
    disks, quick, _ = lab
    raw = DiskFactory(host=HostFactory(team=team, name="db-3"), label="raw", kind=Disk.Kind.BLOCK,
                      target_path="/dev/vdb", allow_destructive=False)  # fmt: skip
    writer = ProfileFactory(team=team, name="writes", rw="randwrite", size_bytes=2**20)
    three = [d.pk for d in disks]
    refusals = [
        ({"disks": three, "sizes": "1,2"}, "sizes", "The last group size is the number of disks given (3), not 2"),
        ({"disks": three, "sizes": "2,1,3"}, "sizes", "The group sizes must grow from one to the next"),
        ({"disks": three, "sizes": "1,two,3"}, "sizes", "give whole numbers of members separated by commas"),
        ({"disks": three, "sizes": "-1,3"}, "sizes", "give whole numbers of members separated by commas"),
        ({"disks": three, "as_sizes": "", "sizes": "1,3"}, "sizes", "Group sizes go with a group-size sweep"),
        ({"disks": three, "cap_iops": "5000"}, "cap_iops", "A group-size sweep takes no backend cap"),
        ({"disks": three[:1]}, "disks", "A group has 2 to 100 members, one a disk; 1 was given"),
        ({"disks": [disks[2].pk, raw.pk], "profile": writer.pk}, "disks", "Member 2 (disk raw on host db-3) is"),
    ]  # fmt: skip
    for change, field, words in refusals:
        data = {"profile": quick.pk, "as_sizes": "on", "sizes": ""} | change

        response = owner_client.post("/sets/group/new/", data)

        assert response.status_code == 200
        errors = response.context["form"].errors
        assert list(errors) == [field] and words in " ".join(errors[field]), (data, errors)
        page = response.content.decode()
        assert "Nothing was started" in page and f'value="{html.escape(data["sizes"])}"' in page
        sweep_box = re.search(r'<input type="checkbox" name="as_sizes"[^>]*>', page).group(0)
        assert (" checked" in sweep_box) == bool(data["as_sizes"]), data
        assert not RunSet.objects.exists() and not Run.objects.exists()
