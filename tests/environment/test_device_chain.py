"""The device chain read from the environment probe's report (pure), and where it shows: the run page's facts,
the changes between runs, the disk page (once), the API as its schema says.

The recorded reports lvm_stripe.txt and lvm_md_partitions.txt are probe.sh's own output on sysfs trees built from
the kernel's documented layout (test_device_chain_probe.py builds them: this kernel has no device-mapper or md);
the other reports are written here, line by line in the probe's format, for the cases a tree cannot show."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import environment
from jobs.environment import chain
from jobs.models import Run
from tests.openapi import schema
from tests.world import client_for, make_world

FIXTURES = Path(__file__).parent.parent / "fixtures" / "environment"


def captured(name: str) -> dict:
    return environment.parse_report((FIXTURES / name).read_text())


def report(*lines: str) -> dict:
    return environment.parse_report("\n".join(["benchweb_environment=1", "dev_name=x", *lines, "end=1"]) + "\n")


def test_an_lvm_stripe_is_named_by_its_volume_and_its_eight_members_are_the_devices_to_watch() -> None:
    env = captured("lvm_stripe.txt")
    found = env["device"]["chain"]
    assert found["top"] == "dm-3" and found["label"] == "vg0/lv" and found["text"] == "vg0/lv → dm-3 → vdb…vdi"
    assert found["members"] == [f"vd{letter}" for letter in "bcdefghi"]
    assert environment.chain_devices(env) == ["dm-3", "vdb", "vdc", "vdd", "vde", "vdf", "vdg", "vdh", "vdi"]


def test_lvm_on_md_on_partitions_keeps_the_partitions_as_members_and_shows_their_disks() -> None:
    env = captured("lvm_md_partitions.txt")
    found = env["device"]["chain"]
    assert found["label"] == "my-vg/data"
    assert found["text"] == "my-vg/data → dm-0 → md0 → sda1, sdb1 → sda, sdb"
    assert found["members"] == ["sda1", "sdb1"]
    assert found["nodes"][1] == {"name": "md0", "kind": "md", "parent": "dm-0", "md_level": "raid1"}
    assert environment.chain_devices(env) == ["dm-0", "sda1", "sdb1"]


def test_a_dm_device_that_is_not_lvm_keeps_its_name_even_with_a_hyphen() -> None:
    env = report("chain_top=dm-0", "chain_node=dm-0 dm -", "chain_dm_name=dm-0 luks-home",
                 "chain_dm_subsystem=dm-0 CRYPT", "chain_node=nvme0n1p2 partition dm-0",
                 "chain_node=nvme0n1 disk nvme0n1p2")  # fmt: skip
    found = env["device"]["chain"]
    assert found["label"] == "luks-home" and found["text"] == "luks-home → dm-0 → nvme0n1p2 → nvme0n1"
    assert found["members"] == ["nvme0n1p2"]


@pytest.mark.parametrize(
    ("dm_name", "lvm"),
    [("vg0-lv", "vg0/lv"), ("my--vg-data", "my-vg/data"), ("a---b", "a-/b"), ("vg0-lv-real", None),
     ("vg0", None), ("-lv", None), ("vg0-", None)],
)  # fmt: skip
def test_lvm_doubles_a_hyphen_inside_a_name_and_joins_the_two_with_one(dm_name: str, lvm: str | None) -> None:
    assert chain.lvm_name(dm_name) == lvm


@pytest.mark.parametrize(
    ("names", "text"),
    [(["vdc", "vdb", "vdd"], "vdb…vdd"), (["vdb", "vdc"], "vdb, vdc"), (["vdb", "vdd", "vde"], "vdb, vdd, vde"),
     (["loop11", "loop9", "loop10"], "loop9…loop11"), (["sda1", "sdb1", "sdc1"], "sda1, sdb1, sdc1"),
     (["sdz", "sdaa", "sdy", "sdx"], "sdx…sdz, sdaa"), (["sda", "vdb", "vdc", "vdd"], "sda, vdb…vdd")],
)  # fmt: skip
def test_three_or_more_consecutive_names_are_a_range_and_others_a_list(names: list[str], text: str) -> None:
    assert chain.compact(names) == text


def test_a_plain_disk_has_no_members_and_is_the_one_device_to_watch() -> None:
    env = report("chain_top=nvme1n1", "chain_node=nvme1n1 disk -")
    assert env["device"]["chain"] == {
        "top": "nvme1n1", "nodes": [{"name": "nvme1n1", "kind": "disk"}], "members": [], "text": "nvme1n1",
    }  # fmt: skip
    assert environment.chain_devices(env) == ["nvme1n1"]


def test_lines_that_do_not_fit_the_chain_are_left_out() -> None:
    env = report(
        "chain_top=dm-1",
        "chain_node=sdb disk dm-1",  # before the device it was reached from
        "chain_node=dm-1 dm -",
        "chain_node=sdc tape dm-1",  # not a kind the probe prints
        "chain_node=sd*d disk dm-1",  # not a kernel name
        "chain_node=sde disk nowhere",  # reached from a device not listed
        "chain_node=sdf disk dm-1",
        "chain_md_level=sdz raid5",  # a device not listed
        "chain_dm_name=dm-1 pool?with a newline",
    )
    found = env["device"]["chain"]
    assert [node["name"] for node in found["nodes"]] == ["dm-1", "sdf"]
    assert found["label"] == "pool?with a newline" and found["members"] == ["sdf"]
    assert report("chain_node=sdb disk -")["device"].get("chain") is None  # no top: no chain


def test_a_run_recorded_before_the_chain_was_read_watches_its_device_alone() -> None:
    assert environment.chain_devices(captured("nvme_odd.txt")) == ["nvme1n1p1"]
    assert environment.chain_devices({"complete": True}) == [] and environment.chain_devices(None) == []


def test_the_run_page_lists_the_chain_and_a_changed_chain_is_a_change_between_runs() -> None:
    before = captured("lvm_stripe.txt")
    assert dict(environment.facts(before))["device chain"] == "vg0/lv → dm-3 → vdb…vdi"
    after = report("chain_top=dm-3", "chain_node=dm-3 dm -", "chain_dm_name=dm-3 vg0-lv", "chain_dm_subsystem=dm-3 LVM",
                   *(f"chain_node=vd{letter} disk dm-3" for letter in "bcdefgh"))  # fmt: skip
    changes = environment.environment_changes(before, after)
    assert "device chain “vg0/lv → dm-3 → vdb…vdi” → “vg0/lv → dm-3 → vdb…vdh”" in changes


@pytest.mark.django_db
@pytest.mark.usefixtures("keep_the_test_connection")
def test_the_disk_page_shows_its_latest_runs_chain_once_and_the_api_answers_as_its_schema_says() -> None:
    world, secret = make_world("chain")
    recorded = captured("lvm_stripe.txt")
    Run.objects.filter(pk=world.run.pk).update(environment=recorded)
    # Schemathesis first: the test client's request puts back the signal that would close the test's connection.
    case = schema["/api/v1/runs/{id}/"]["GET"].Case(path_parameters={"id": world.run.pk})
    response = case.call_and_validate(headers={"Authorization": f"Bearer {secret}"})
    assert response.json()["environment"]["device"]["chain"] == recorded["device"]["chain"]

    page = client_for(secret)
    page.force_login(world.owner)
    html = page.get(f"/disks/{world.disk.pk}/").content.decode()
    assert html.count("Device chain") == 1
    line = html.split('id="device-chain">')[1].split("</dd>")[0]
    assert line.startswith("vg0/lv → dm-3 → vdb…vdi ")
    assert f'<a href="/runs/{world.run.pk}/">run #{world.run.pk}</a>' in line


@pytest.mark.django_db
def test_a_disk_whose_latest_run_has_no_chain_shows_no_chain_line() -> None:
    world, secret = make_world("nochain")
    Run.objects.filter(pk=world.run.pk).update(environment=captured("nvme_odd.txt"))
    page = client_for(secret)
    page.force_login(world.owner)
    assert "Device chain" not in page.get(f"/disks/{world.disk.pk}/").content.decode()
