"""The first steps a new user takes and the small traps on them: the Run now choice, copying a profile, the
home page's next step, the 404 page, and the disk form's words about destructive writes."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs import presets
from jobs.models import Disk, Host, Membership, Profile, Run
from jobs.runs import queueing
from jobs.sets import requesting
from tests.factories import HostFactory, RunFactory

ESSD = "ESSD PL3: 4k randwrite numjobs=10 QD128"
NDISK = "ndisk64: 4k random 50/50, 4 processes"


def _options(page: str) -> dict[str, tuple[bool, bool, str]]:
    """The Run now select's options: name -> (selected, disabled, label)."""
    start = page.index('<select name="profile"')
    select = page[start : page.index("</select>", start)]
    found = {}
    for attrs, label in re.findall(r"<option([^>]*)>([^<]*)</option>", select):
        name = label.split(" — cannot run here")[0]
        found[name] = ("selected" in attrs, "disabled" in attrs, label)
    return found


def _block_disk(host, **fields) -> Disk:
    fields = {"label": "raw", "target_path": "/dev/vdb"} | fields
    return Disk.objects.create(host=host, kind=Disk.Kind.BLOCK, disk_type="custom", **fields)


# ------------------------------------------------------------------------------------------------ Run now


def test_run_now_starts_on_the_quick_check_and_greys_out_the_raw_device_recipe_on_a_directory(owner_client, disk):
    options = _options(owner_client.get(f"/disks/{disk.pk}/").content.decode())
    selected = [name for name, (is_selected, _, _) in options.items() if is_selected]
    assert selected == [presets.QUICK_CHECK]
    assert options[ESSD][1] and options[ESSD][2].endswith("— cannot run here: raw device only")
    assert not options[NDISK][1]  # the ndisk64 presets have a size: they may run in a directory
    assert not options["Ultra stripe: 4k randwrite QD128"][1]  # writes in a directory need no switch


def test_run_now_starts_on_the_profile_last_run_on_the_disk_while_it_can_still_run(owner_client, disk, team):
    mine = Profile.objects.create(team=team, name="mine", rw="randread", size_bytes=2**20)
    RunFactory(disk=disk, profile=mine, succeeded=True)
    options = _options(owner_client.get(f"/disks/{disk.pk}/").content.decode())
    assert [name for name, (is_selected, _, _) in options.items() if is_selected] == ["mine"]
    Profile.objects.filter(pk=mine.pk).update(size_bytes=None)  # now a raw-device profile
    options = _options(owner_client.get(f"/disks/{disk.pk}/").content.decode())
    assert [name for name, (is_selected, _, _) in options.items() if is_selected] == [presets.QUICK_CHECK]
    assert options["mine"][1]


def test_on_a_block_device_write_profiles_are_greyed_out_until_destructive_writes_are_allowed(owner_client, host):
    device = _block_disk(host)
    options = _options(owner_client.get(f"/disks/{device.pk}/").content.decode())
    assert options[ESSD][1] and options[ESSD][2].endswith("destructive: disk not marked for destructive writes")
    assert not options[presets.QUICK_CHECK][1] and options[presets.QUICK_CHECK][0]
    Disk.objects.filter(pk=device.pk).update(allow_destructive=True)
    options = _options(owner_client.get(f"/disks/{device.pk}/").content.decode())
    assert not options[ESSD][1]


def test_a_profile_that_cannot_run_is_refused_by_the_form_and_the_api_with_the_same_reason(owner_client, disk, team):
    essd = Profile.objects.get(builtin=True, name=ESSD)
    response = owner_client.post(f"/disks/{disk.pk}/", {"profile": essd.pk})
    assert response.status_code == 200 and not Run.objects.exists()
    error = " ".join(response.context["form"].errors["profile"])
    assert error.startswith(f"{ESSD} cannot run on disk data: it has no file size, so it runs on a whole block")
    api = owner_client.post("/api/v1/runs/", {"disk": disk.pk, "profile": essd.pk}, content_type="application/json")
    assert api.status_code == 400 and not Run.objects.exists()
    assert "it has no file size" in api.content.decode()


def test_the_refusal_rule_is_the_one_the_form_shows(disk, host, team):
    """Every preset on a directory, a locked device and an open device: create_run refuses exactly the greyed ones."""
    locked, open_device = _block_disk(host), _block_disk(host, label="open", allow_destructive=True)
    for target in (disk, locked, open_device):
        for profile in Profile.objects.filter(builtin=True):
            refusal = target.refusal_for(profile)
            # A built-in sweep is made as one (its points are runs of it); the refusal is the same rule.
            create = requesting.create_sweep if profile.is_sweep else queueing.create_run
            if refusal:
                with pytest.raises(queueing.RunRefused, match=re.escape(refusal.message)):
                    create(target, profile)
            else:
                create(target, profile).delete()
    assert disk.refusal_for(Profile.objects.get(name=ESSD)).short == "raw device only"
    assert locked.refusal_for(Profile.objects.get(name=ESSD)).short.startswith("destructive")
    no_size = Profile.objects.create(team=team, name="ndisk no size", tool="ndisk64", size_bytes=None)
    assert open_device.refusal_for(no_size).short == "needs a size"


# -------------------------------------------------------------------------------------------- copy profile


def test_copying_a_profile_saves_nothing_until_save(owner_client, team):
    preset = Profile.objects.get(builtin=True, name=presets.QUICK_CHECK)
    response = owner_client.get(f"/profiles/{preset.pk}/copy/")
    page = response.content.decode()
    assert response.status_code == 200 and not Profile.objects.filter(team=team).exists()
    assert f'value="{presets.QUICK_CHECK} (copy)"' in page and 'value="256M"' in page
    assert f'href="/profiles/{preset.pk}/"' in page  # Cancel goes back to the preset and leaves nothing
    form = response.context["form"]
    data = {name: form[name].value() for name in form.fields}
    # What a browser submits: an unticked box is left out.
    data = {k: ("on" if v is True else v) for k, v in data.items() if v is not None and v is not False}
    saved = owner_client.post(f"/profiles/{preset.pk}/copy/", data)
    assert saved.status_code == 302, saved.context["form"].errors
    copy = Profile.objects.get(team=team)
    assert saved.status_code == 302 and saved["Location"] == f"/profiles/{copy.pk}/"
    assert copy.name == f"{presets.QUICK_CHECK} (copy)" and copy.parameters() == preset.parameters()


# ---------------------------------------------------------------------------------------------- 404 pages


def test_an_unknown_page_is_laid_out_with_the_navigation_and_a_way_on(owner_client):
    response = owner_client.get("/no/such/page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert '<nav aria-label="Main">' in page and "olga" in page
    assert "Page not found" in page and "/no/such/page/" in page
    assert 'href="/"' in page and 'href="/hosts/"' in page


def test_a_disk_of_another_team_is_a_laid_out_404_too(owner_client, host):
    other = HostFactory()
    foreign = Disk.objects.create(host=other, label="theirs", target_path="/data", disk_type="custom")
    response = owner_client.get(f"/disks/{foreign.pk}/")
    assert response.status_code == 404 and "Page not found" in response.content.decode()
    assert "theirs" not in response.content.decode()


def test_the_api_still_answers_404_in_json(owner_client):
    response = owner_client.get("/api/nothing-here/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "/api/docs/" in response.json()["detail"]


def test_a_refused_change_is_a_laid_out_403(owner, team, disk):
    viewer = User.objects.create_user("vera", password="a-long-test-password-1")
    Membership.objects.create(user=viewer, team=team, role="viewer")
    client = Client()
    client.force_login(viewer)
    response = client.post(f"/disks/{disk.pk}/edit/", {"label": "x"})
    page = response.content.decode()
    assert response.status_code == 403 and '<nav aria-label="Main">' in page and "Viewers can look" in page
    assert "Nothing was changed" in page


def test_the_500_page_has_the_layout_without_any_request_context(rf):
    from django.views.defaults import server_error

    response = server_error(rf.get("/somewhere/"))
    page = response.content.decode()
    assert response.status_code == 500 and "Something went wrong on the server" in page
    assert 'class="topbar"' in page and 'href="/"' in page and "Main" not in page  # no user: no navigation


# ---------------------------------------------------------------------------------------------- home hints


def _next_step(client: Client) -> str:
    page = client.get("/").content.decode()
    if 'id="next-step"' not in page:
        return ""
    section = page[page.index('id="next-step"') :]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section[: section.index("</section>")])).strip()


def test_the_home_page_says_the_next_step_until_the_first_run(owner_client, team, credential):
    assert "Register your first host" in _next_step(owner_client)
    host = HostFactory(team=team, name="vm1", credential=credential)
    assert "Add a disk" in _next_step(owner_client)
    disk = Disk.objects.create(host=host, label="data", target_path="/data/bench", disk_type="custom")
    assert "Test the connection to vm1" in _next_step(owner_client)  # no run logs in before the key is approved
    Host.objects.filter(pk=host.pk).update(host_key_b64="AAAAC3NzaC1lZDI1NTE5", host_key_fingerprint="SHA256:x")
    step = _next_step(owner_client)
    assert "Run the quick check on vm1:data" in step
    page = owner_client.get("/").content.decode()
    quick = Profile.objects.get(builtin=True, name=presets.QUICK_CHECK)
    assert f'action="/disks/{disk.pk}/"' in page and f'name="profile" value="{quick.pk}"' in page
    RunFactory(disk=disk, succeeded=True)
    assert _next_step(owner_client) == ""


def test_a_viewer_is_told_what_a_viewer_can_do(owner, team, credential):
    viewer = User.objects.create_user("vera", password="a-long-test-password-1")
    Membership.objects.create(user=viewer, team=team, role="viewer")
    client = Client()
    client.force_login(viewer)
    step = _next_step(client)
    assert "Register your first host" not in step and "a member or an owner" in step
    host = HostFactory(team=team, name="vm1", credential=credential, host_key_b64="AAAA", host_key_fingerprint="x")
    Disk.objects.create(host=host, label="data", target_path="/data/bench", disk_type="custom")
    step = _next_step(client)
    assert "Run the quick check" not in step and "a member or an owner" in step
    assert 'name="profile"' not in client.get("/").content.decode()


# ------------------------------------------------------------------------------------ disk form help text


def test_the_disk_form_says_the_switch_is_for_block_device_writes_only(owner_client, host):
    page = owner_client.get(f"/hosts/{host.pk}/disks/new/").content.decode()
    assert "Allow destructive writes" in page
    assert "Needed by write and mixed profiles" not in page
    assert "Only a block device needs it" in page and "a directory needs no switch" in page
