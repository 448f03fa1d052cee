"""A group's or a group-size sweep's request through the API, as their tests share it: a body changed for one
refusal, a disk the safety rules refuse, and the check that a refusal is a 400 naming its field, with nothing
written."""

from __future__ import annotations

from typing import Any

from jobs.models import Disk, Run, RunSet
from tests.factories import DiskFactory, HostFactory
from tests.world import post


def changed(body: dict[str, Any], change: dict[str, Any], disks: list[Disk]) -> dict[str, Any]:
    """`body` with each field of `change` set (a callable picks disks from `disks`), or left out where it is None."""
    body = dict(body)
    for name, value in change.items():
        value = [d.pk for d in value(disks)] if callable(value) else value
        body.pop(name) if value is None else body.update({name: value})
    return body


def refused_disk(world) -> Disk:
    """A block device of the world's team that the safety rules keep a writing profile off: member 4 of a group."""
    host = HostFactory(team=world.team, name="db-raw")
    return DiskFactory(host=host, label="raw", kind=Disk.Kind.BLOCK, target_path="/dev/vdb", allow_destructive=False)


def assert_refused_whole(api, body: dict[str, Any], field: str, words: str) -> None:
    """POST /api/v1/sets/ answers 400 naming only `field`, its message holding `words`, and writes no set or run."""
    before = RunSet.objects.count(), Run.objects.count()

    response = post(api, "/api/v1/sets/", body)

    assert response.status_code == 400, (body, response.content)
    assert list(response.json()) == [field], (body, response.json())
    assert words in str(response.json()[field]), (body, response.json())
    assert (RunSet.objects.count(), Run.objects.count()) == before
