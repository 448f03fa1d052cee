"""Two sets of a team's runs compared with statistics (jobs/analysis/stats.py): disk A against disk B under one
profile, or one disk before against after a moment. The numbers are the RunResult columns the disk chart draws,
so what is tested is what the charts show.

Both the Compare page and GET /api/v1/compare/stats/ read their query here, so the parameters, their defaults
and their errors are the same in both: a StatsError names the parameter and says what it takes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, tzinfo
from typing import Any

from django.db.models import QuerySet, Sum
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from jobs import clock, units
from jobs.analysis import stats
from jobs.models import Annotation, Disk, RunResult, RunResultDay, Team

# Each metric: the RunResult column, its words, its unit, and whether a higher value is faster.
METRICS: dict[str, tuple[str, str, str, bool]] = {
    "iops": ("total_iops", "total IOPS", "IO/s", True),
    "bandwidth": ("bw_bytes_per_s", "bandwidth", "bytes/s", True),
    "read_p99": ("read_p99_us", "read p99 latency", "µs", False),
    "write_p99": ("write_p99_us", "write p99 latency", "µs", False),
}
# The newest runs of a set that are compared: the Hodges-Lehmann CI sorts every pairwise difference (n x m).
MAX_RUNS = 500
# How many disks or runs the Compare page (and a share link of a comparison) sets side by side.
COMPARE_MIN, COMPARE_MAX = 2, 8


class StatsError(ValueError):
    """A parameter that cannot be used: `field` names it, the message says what it takes."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Query:
    """What to compare: disks (a, b) or one disk split at `split`; the rest as given or defaulted."""

    a: Disk
    b: Disk | None
    split: datetime | None
    profile: str
    metric: str
    test: str
    skip_unsteady: bool
    skip_verdicts: bool = False  # leave out runs with a verdict against their number (docs/user-guide/verdicts.md)
    split_label: str = ""  # the note the split comes from ("kernel upgrade"), when it came from one
    zone: tzinfo = UTC  # the zone a split date's midnight and the sets' labels are in: the reader's on the page


@dataclass(frozen=True)
class RunSet:
    label: str
    disk: Disk
    start: datetime | None
    end: datetime | None  # exclusive
    runs: list[int]
    values: list[float]
    left_out_unsteady: int
    left_out_verdicts: int = 0

    def as_dict(self, summary: stats.SetSummary) -> dict[str, Any]:
        return {
            "label": self.label,
            "disk": self.disk.pk,
            "from": self.start,
            "to": self.end,
            "runs": self.runs,
            "left_out_unsteady": self.left_out_unsteady,
            "left_out_verdicts": self.left_out_verdicts,
            "n": summary.n,
            "median": summary.median,
            "mean": summary.mean,
        }


def parse(params: Mapping[str, str], team: Team, zone: tzinfo = UTC) -> Query:
    """The query from ?a_disk=&b_disk= or ?disk=&split=, with profile, metric, test and skip_unsteady; a split
    date or date-time without an offset is read in the zone (UTC in the API, the reader's on the page)."""
    metric = params.get("metric") or "iops"
    if metric not in METRICS:
        raise StatsError("metric", f"{metric!r} is not a metric; choose one of {', '.join(METRICS)}.")
    test = params.get("test") or stats.MANN_WHITNEY
    if test not in stats.TESTS:
        raise StatsError("test", f"{test!r} is not a test; choose {' or '.join(stats.TESTS)}.")
    skip = (params.get("skip_unsteady") or "true").lower()
    if skip not in ("true", "false", "1", "0"):
        raise StatsError("skip_unsteady", f"{skip!r} is not true or false.")
    skip_judged = (params.get("skip_verdicts") or "false").lower()
    if skip_judged not in ("true", "false", "1", "0"):
        raise StatsError("skip_verdicts", f"{skip_judged!r} is not true or false.")
    pair = params.get("a_disk") or params.get("b_disk")
    single = params.get("disk") or params.get("split") or params.get("annotation")
    if bool(pair) == bool(single):
        raise StatsError(
            "disk",
            "Give either a_disk and b_disk (disk A against disk B) or disk and split (one disk before and after "
            "an ISO date such as 2026-11-20) or annotation (before and after a note's moment).",
        )
    label = ""
    if pair:
        a, b = disk_param(params, "a_disk", team), disk_param(params, "b_disk", team)
        if a.pk == b.pk:
            raise StatsError("b_disk", "b_disk is a_disk; to compare one disk with itself, give disk and split.")
        split = None
    elif params.get("annotation"):
        if params.get("split"):
            raise StatsError("split", "Give split or annotation, not both: the note's moment is the split.")
        note = _annotation(params.get("annotation") or "", team)
        if params.get("disk"):
            a = disk_param(params, "disk", team)
        elif note.disk is not None:
            a = note.disk
        else:
            raise StatsError("disk", f"The note {note.text!r} is for {note.scope}: give disk, the one to compare.")
        b, split, label = None, note.at, note.text
    else:
        a, b, split = disk_param(params, "disk", team), None, moment(params.get("split") or "", zone)
    disks = [a] if b is None else [a, b]
    profile = choose_profile(disks, params.get("profile") or "")
    return Query(a, b, split, profile, metric, test, skip in ("true", "1"), skip_judged in ("true", "1"), label, zone)


def choose_profile(disks: Iterable[Disk], given: str) -> str:
    """The profile given, else the one profile every disk has results of, else the one profile any has (a disk
    without runs of it has none to show); an error naming the choices when that is not one."""
    if given:
        return given
    disks = list(disks)
    names = Counter(name for disk in disks for name in profiles_of(disk))
    shared = sorted(name for name, count in names.items() if count == len(disks)) or sorted(names)
    if len(shared) == 1:
        return shared[0]
    if not shared:
        raise StatsError("profile", "None of these disks has a run yet: give profile=<name> (a profile's name).")
    raise StatsError("profile", f"Runs of several profiles: give profile=<name>, one of {', '.join(shared)}.")


def run_set(query: Query, disk: Disk, label: str, start: datetime | None, end: datetime | None) -> RunSet:
    """The newest MAX_RUNS results of the disk under the query's profile between start and end that measured the
    metric; runs judged not steady are left out (and counted) when the query says so."""
    column = METRICS[query.metric][0]
    found: QuerySet[RunResult] = RunResult.objects.filter(
        disk=disk, profile_name=query.profile, **{f"{column}__isnull": False}
    )
    if start is not None:
        found = found.filter(finished_at__gte=start)
    if end is not None:
        found = found.filter(finished_at__lt=end)
    unsteady = judged = 0
    if query.skip_unsteady:
        unsteady = found.filter(steady=False).count()
        found = found.exclude(steady=False)
    if query.skip_verdicts:
        judged = found.filter(measured_disk=False).count()
        found = found.exclude(measured_disk=False)
    rows = list(found.order_by("-finished_at").values_list("run_id", column)[:MAX_RUNS])
    return RunSet(label, disk, start, end, [run for run, _ in rows], [float(v) for _, v in rows], unsteady, judged)


def sets(query: Query) -> tuple[RunSet, RunSet]:
    if query.b is not None:
        return (
            run_set(query, query.a, f"A: {query.a.label}", None, None),
            run_set(query, query.b, f"B: {query.b.label}", None, None),
        )
    assert query.split is not None  # parse gives a split to a one-disk query
    when = clock.show(query.split, query.zone, clock.MINUTES)
    if query.split_label:
        when = f"“{query.split_label}” ({when})"
    return (
        run_set(query, query.a, f"before {when}", None, query.split),
        run_set(query, query.a, f"after {when}", query.split, None),
    )


def compare(query: Query) -> dict[str, Any]:
    """The comparison as the API answers it and the Compare page's card shows it."""
    a, b = sets(query)
    _, words, unit, higher_is_faster = METRICS[query.metric]
    found = stats.compare(
        a.values, b.values, test=query.test, higher_is_faster=higher_is_faster, names=(a.label, b.label)
    )
    answer = found.as_dict()
    answer |= {
        "metric": query.metric,
        "metric_label": words,
        "unit": unit,
        "profile": query.profile,
        "skip_unsteady": query.skip_unsteady,
        "skip_verdicts": query.skip_verdicts,
        "split": query.split,
        "min_runs": stats.MIN_RUNS,
        "a": a.as_dict(found.a),
        "b": b.as_dict(found.b),
    }
    return answer


def shown(value: float | None, metric: str) -> str:
    """A metric's value as the tables print it."""
    if metric == "iops":
        return units.format_iops(value)
    if metric == "bandwidth":
        return units.format_bytes_per_s(value)
    return units.format_micros(value)


def disk_param(params: Mapping[str, str], field: str, team: Team) -> Disk:
    value = params.get(field) or ""
    if not (value.isascii() and value.isdigit()) or int(value) > 2**63 - 1:
        raise StatsError(field, f"{field} takes a disk's id, a whole number such as 3; got {value!r}.")
    found = Disk.objects.filter(team=team, pk=int(value)).first()
    if found is None:
        raise StatsError(field, f"No disk {value} in your team.")
    return found


def _annotation(value: str, team: Team) -> Annotation:
    """The team's note with this id, whose moment splits the disk's runs."""
    found = None
    if value.isascii() and value.isdigit() and len(value) < 19:
        found = Annotation.objects.filter(team=team, pk=int(value)).select_related("disk", "host").first()
    if found is None:
        raise StatsError("annotation", f"No note {value} in your team; the Changes page lists them with their ids.")
    return found


def moment(value: str, zone: tzinfo) -> datetime:
    """An ISO date (its midnight in the zone) or date-time (in the zone when it names none)."""
    try:
        found = parse_datetime(value)
        day = None if found else parse_date(value)
    except ValueError:
        found = day = None
    if day is not None:
        found = datetime.combine(day, time(), tzinfo=zone)
    if found is None:
        raise StatsError("split", f"split takes an ISO date or date-time such as 2026-11-20; got {value!r}.")
    return found if found.tzinfo else found.replace(tzinfo=zone)


def card(params: Mapping[str, str], team: Team, disk_ids: list[int]) -> dict[str, Any] | None:
    """The Compare page's Statistics card: the first two disks compared (or those picked in the card), or one
    disk before/after `split`; the comparison or the error, and what the card's forms offer. None: no card."""
    split_asked = bool(params.get("disk") or params.get("split") or params.get("annotation"))
    if not split_asked and len(disk_ids) < 2:
        return None
    asked = {key: params.get(key) or "" for key in ("metric", "test", "profile", "skip_unsteady", "skip_verdicts")}
    if split_asked:
        asked |= {key: params.get(key) or "" for key in ("disk", "split", "annotation")}
    else:
        a, b = params.get("a_disk") or str(disk_ids[0]), params.get("b_disk") or str(disk_ids[1])
        asked |= {"a_disk": a, "b_disk": b}
    chosen = Disk.objects.filter(team=team, pk__in=disk_ids).order_by("label")
    found: dict[str, Any] = {"asked": asked, "metrics": METRICS, "tests": stats.TESTS, "chosen_disks": chosen}
    ids = [asked[key] for key in ("disk", "a_disk", "b_disk") if key in asked]
    found["profiles"] = _shared_profiles([int(v) for v in ids if v.isascii() and v.isdigit() and len(v) < 19], team)
    if not asked["profile"] and found["profiles"]:
        # The page starts with the profile of the most runs (a first profile by name may have one run, too few to
        # tell anything); the API asks for one when there are several.
        asked["profile"] = min(found["profiles"], key=lambda pair: (-pair[1], pair[0]))[0]
    try:
        query = parse(asked, team, timezone.get_current_timezone())  # the page's zone: a split date's midnight there
    except StatsError as exc:
        return found | {"error": f"{exc.field}: {exc}"}
    result = compare(query)
    for side in ("a", "b"):
        result[side]["median_text"] = shown(result[side]["median"], query.metric)
        result[side]["mean_text"] = shown(result[side]["mean"], query.metric)
    return found | {"result": result, "query": query}


def _shared_profiles(disk_ids: list[int], team: Team) -> list[tuple[str, int]]:
    """The profiles the disks share or, when they share none, any of them has (as choose_profile picks), by name,
    each with its number of results on those disks (from the day rollup)."""
    rows = (
        RunResultDay.objects.filter(disk__team=team, disk_id__in=disk_ids)
        .values_list("disk_id", "profile_name")
        .annotate(runs=Sum("runs"))
        .order_by()
    )
    names: dict[int, set[str]] = {
        disk_id: set() for disk_id in Disk.objects.filter(team=team, pk__in=disk_ids).values_list("pk", flat=True)
    }
    runs: Counter[str] = Counter()
    for disk_id, name, count in rows:
        names[disk_id].add(name)
        runs[name] += count
    sets = list(names.values())
    shared = set.intersection(*sets) or set.union(*sets) if sets else set()
    return [(name, runs[name]) for name in sorted(shared)]


def profiles_of(disk: Disk) -> set[str]:
    """The profile names of the disk's results, from its days: a disk with 100,000 runs has a few hundred."""
    return set(RunResultDay.objects.filter(disk=disk).values_list("profile_name", flat=True).distinct())
