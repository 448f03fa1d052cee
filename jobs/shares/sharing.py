"""Making and revoking share links, and the checks on what a link may show: a disk of the team, a comparison
of 2 to 8 of the team's disks or runs, a sweep of the team, or a group of the team that ended. The pages and the
API both come here, so they refuse the same things with the same words, naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from audit import log as audit
from audit.models import AuditEvent
from jobs import clock
from jobs.analysis import stats as analysis
from jobs.models import Disk, Run, RunSet, ShareLink, Team
from jobs.models.sharing import DEFAULT_DAYS, MAX_DAYS
from jobs.results import stats

# The expiry choices the pages offer; the API takes any whole number of days from 1 to MAX_DAYS.
EXPIRY_CHOICES = [(1, "1 day"), (DEFAULT_DAYS, "7 days"), (30, "30 days"), (MAX_DAYS, "90 days")]
# The sets a link may show: a sweep's page, or a group's once it ended.
SHARED_SETS = (RunSet.Kind.SWEEP, RunSet.Kind.GROUP)
# The Statistics card's choices a comparison keeps; the before/after split is a page of its own, not shared.
STATS_KEYS = ("profile", "metric", "test", "skip_unsteady", "a_disk", "b_disk")


class ShareRefused(ValueError):
    """What cannot be shared: `field` names the field to fix, the message says how."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def expiry_days(value: Any) -> int:
    """Days until the link expires: a whole number from 1 to MAX_DAYS; None or "" is the default."""
    if value is None or value == "":
        return DEFAULT_DAYS
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit())):
        raise ShareRefused("expires_in_days", f"Give a whole number of days from 1 to {MAX_DAYS}, e.g. 7.")
    days = int(value)
    if not 1 <= days <= MAX_DAYS:
        raise ShareRefused(
            "expires_in_days", f"{days} days is not allowed: a link lasts 1 to {MAX_DAYS} days; make a new one later."
        )
    return days


def compare_query(params: Mapping[str, Any], team: Team) -> dict[str, Any]:
    """The comparison a link shows, checked: {"disks": [ids]} or {"runs": [ids]} of the team, with the Statistics
    card's choices. `params` is the Compare page's query string or the API's `compare` object."""
    disks, runs = _ids(params, "disks"), _ids(params, "runs")
    if bool(disks) == bool(runs):
        raise ShareRefused("compare", 'Give disks or runs to compare (one of them), e.g. {"disks": [3, 7]}.')
    key, chosen = ("disks", disks) if disks else ("runs", runs)
    if not stats.COMPARE_MIN <= len(chosen) <= stats.COMPARE_MAX:
        raise ShareRefused(
            "compare", f"A comparison has {stats.COMPARE_MIN} to {stats.COMPARE_MAX} {key}; {len(chosen)} were given."
        )
    model = Disk if disks else Run
    found = set(model.objects.filter(team=team, pk__in=chosen).values_list("pk", flat=True))
    if missing := [pk for pk in chosen if pk not in found]:
        raise ShareRefused("compare", f"No {key[:-1]} {missing[0]} in your team: pick {key} of your team's.")
    query: dict[str, Any] = {key: chosen}
    if disks:
        query |= _stats_choices(params, disks)
    return query


def _ids(params: Mapping[str, Any], key: str) -> list[int]:
    """[3, 7], "3,7" or, from a query string, several "3" and "7": each an id."""
    getlist = getattr(params, "getlist", None)
    values = getlist(key) if getlist else params.get(key)
    if values is None or values == "":
        return []
    items = values if isinstance(values, list) else [values]
    parts = [part for item in items for part in (item.split(",") if isinstance(item, str) else [item])]
    ids = []
    for part in parts:
        text = part.strip() if isinstance(part, str) else part
        if isinstance(text, bool) or not (isinstance(text, int) or (isinstance(text, str) and text.isdigit())):
            raise ShareRefused("compare", f"{key} takes ids, e.g. [3, 7]; {str(part)[:20]!r} is not one.")
        if not 0 < int(text) < 2**63:
            raise ShareRefused("compare", f"{key} takes ids, e.g. [3, 7]; {text} is not one.")
        ids.append(int(text))
    return list(dict.fromkeys(ids))


def _stats_choices(params: Mapping[str, Any], disks: list[int]) -> dict[str, str]:
    found = {key: str(params.get(key) or "") for key in STATS_KEYS if params.get(key)}
    if found.get("metric", "iops") not in stats.METRICS:
        raise ShareRefused("compare", f"metric is one of {', '.join(stats.METRICS)}.")
    if found.get("test", analysis.MANN_WHITNEY) not in analysis.TESTS:
        raise ShareRefused("compare", f"test is one of {', '.join(analysis.TESTS)}.")
    if found.get("skip_unsteady", "true") not in ("true", "false"):
        raise ShareRefused("compare", "skip_unsteady is true or false.")
    for side in ("a_disk", "b_disk"):
        if side in found and found[side] not in {str(pk) for pk in disks}:
            raise ShareRefused("compare", f"{side} must be one of the disks compared.")
    if len(found.get("profile", "")) > 200:
        raise ShareRefused("compare", "profile is a profile's name, at most 200 characters.")
    return found


def create(team: Team, user: Any, *, days: int, disk: Disk | None = None, compare: dict[str, Any] | None = None,
           run_set: RunSet | None = None, via: str = "api", page_zone: str = "") -> tuple[ShareLink, str]:  # fmt: skip
    """A link to the disk's page, the comparison (already checked) or the sweep's page, and its token, shown this
    once. Its pages write times in the creator's zone: their Preferences, else the page's they made it from, else
    UTC."""
    if disk is not None and disk.team_id != team.pk:
        raise ShareRefused("disk", "No such disk in your team.")
    if run_set is not None and (run_set.team_id != team.pk or run_set.kind not in SHARED_SETS):
        raise ShareRefused("run_set", "No such sweep or group in your team: open its page and use Share… there.")
    if run_set is not None and run_set.kind == RunSet.Kind.GROUP and not run_set.is_final:
        raise ShareRefused("run_set", f"{run_set.label.capitalize()} has not ended: share it once its totals are in.")
    zone = clock.choose(_preference(user), page_zone).name
    link, token = ShareLink.issue(team=team, user=user, days=days, disk=disk, compare=compare, run_set=run_set,
                                  time_zone=zone)  # fmt: skip
    audit.record(team, user, AuditEvent.Action.SHARE_CREATED, link, kind=link.kind, disk=disk and disk.pk,
                 compare=compare, run_set=run_set and run_set.pk, expires_at=link.expires_at.isoformat(),
                 via=via)  # fmt: skip
    return link, token


def _preference(user: Any) -> str:
    try:
        return str(user.preferences.time_zone or "")
    except (AttributeError, ObjectDoesNotExist):
        return ""


def revoke(link: ShareLink, user: Any, via: str = "api") -> bool:
    """Revoke the link: from now on it answers 410. False when it already was revoked."""
    if not link.revoke():
        return False
    audit.record(link.team, user, AuditEvent.Action.SHARE_REVOKED, link, kind=link.kind, via=via)
    return True


def describe(link: ShareLink) -> str:
    """What the link shows, for the team's list: "disk vm1:data", "sweep 12 (qd sweep on data)", "group 14 (qd1 on
    3 disks)" or "comparison of disks 3, 7"."""
    if link.disk is not None:
        return f"disk {link.disk}"
    if link.run_set is not None and link.run_set.kind == RunSet.Kind.GROUP:
        return (
            f"{link.run_set.label} ({link.run_set.profile_name} on {len(link.run_set.plan.get('disks') or [])} disks)"
        )
    if link.run_set is not None:
        return f"{link.run_set.label} ({link.run_set.profile_name} on {link.run_set.disk.label})"
    query = link.compare or {}
    key = "disks" if "disks" in query else "runs"
    return f"comparison of {key} {', '.join(str(pk) for pk in query.get(key, []))}"
