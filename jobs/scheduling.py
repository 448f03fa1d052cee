"""Schedule maths: when a rule fires, whether a moment is blacked out, and how targets are spread out.

Pure: standard library, croniter and zoneinfo only. The Schedule model and the beat tick are the edges
(docs/decisions/0003-schedules-owned-by-benchweb.md); every instant in and out of this module is an aware
datetime, and out it is UTC.

Cron expressions are read in the rule's time zone, on the wall clock. croniter walks naive local times
(it mishandles aware ones across DST changes) and zoneinfo turns each into an instant:
- a local time that does not exist (the clocks jump forward, 02:30 on 2026-03-29 in Berlin) fires once,
  at the first instant after the jump (03:00 CEST). Several skipped times (02:10, 02:40) land on that
  same instant and fire once together, and the fires stay in order;
- a local time that happens twice (the clocks go back, 02:30 on 2026-10-25 in Berlin) fires once, the
  first time (fold=0, still summer time). So an hourly schedule has no fire in the repeated hour: it runs
  once per wall-clock hour, which leaves a two-hour gap in UTC that night.

Bounds: the active window includes its start and excludes its end; a blackout "HH:MM-HH:MM" includes its
start and excludes its end, on the local wall clock. Interval fires are anchor + k * interval, k >= 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta, tzinfo
from functools import cache
from itertools import islice, pairwise
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

KINDS = ("cron", "interval")
DEFAULT_ANCHOR = datetime(2000, 1, 1, tzinfo=UTC)
MINUTES_PER_DAY = 24 * 60
# next_fires gives up after this many candidate times or this far ahead: a rule whose fires all fall in
# blackouts or outside its window must not spin the beat.
SEARCH_CANDIDATES = 100_000
SEARCH_HORIZON = timedelta(days=5 * 366)
# The stagger check compares one fire's whole plan with the shortest period over this many fires.
PERIOD_SAMPLE = 50

CRON_EXAMPLE = "use five fields like '30 2 * * *' (02:30 daily)"
CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))
_BLACKOUT = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")
# croniter's R (random) and H (hashed) would move the fires every time the rule is read.
_RANDOM_FIELD = re.compile(r"(^|[,/-])[HR](\(|$|[,/-])", re.IGNORECASE)
_EPSILON = timedelta(microseconds=1)


@dataclass(frozen=True)
class Rule:
    kind: str  # "cron" | "interval"
    cron: str = ""  # five fields, e.g. "30 2 * * *"
    timezone: str = "UTC"  # IANA name; cron fields and blackouts are read on this zone's wall clock
    interval_minutes: int | None = None
    anchor: datetime | None = None  # fires are anchor + k * interval; default window_start, else 2000-01-01
    window_start: datetime | None = None  # included
    window_end: datetime | None = None  # excluded
    blackouts: tuple[str, ...] = ()  # daily local ranges "HH:MM-HH:MM"; "22:00-06:00" wraps midnight


@dataclass(frozen=True)
class Target:
    key: object
    host: str
    site: str
    duration_s: float  # the whole profile sequence on this target


# ----------------------------------------------------------------------------- validation


def validate(rule: Rule, *, stagger_s: float = 0, n_targets: int = 1, sequence_s: float = 0) -> dict[str, str]:
    """{} when the rule is usable, else {field: message}; each message shows a valid example."""
    errors: dict[str, str] = {}
    if rule.kind not in KINDS:
        errors["kind"] = f"'{rule.kind}' is not a schedule kind; use 'cron' (e.g. '30 2 * * *') or 'interval'"
    if _zone_or_none(rule.timezone) is None:
        errors["timezone"] = (
            f"'{rule.timezone}' is not a known IANA time zone; use a name like 'Europe/Berlin', "
            "'America/New_York' or 'UTC'"
        )
    if rule.kind == "cron" and (problem := _cron_problem(rule.cron)):
        errors["cron"] = problem
    minutes = rule.interval_minutes
    if rule.kind == "interval" and (not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 1):
        errors["interval_minutes"] = (
            f"{minutes!r} is not a number of minutes; use a whole number of at least 1, e.g. 60 (hourly) or 90"
        )
    errors.update(_window_problems(rule))
    if problem := _blackouts_problem(rule.blackouts):
        errors["blackouts"] = problem
    if not errors:
        errors.update(_never_fires_problems(rule))
    if not errors and (problem := _stagger_problem(rule, stagger_s, max(n_targets, 1), sequence_s)):
        errors["stagger_s"] = problem
    return errors


def _zone_or_none(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        return None


def _cron_problem(expression: str | None) -> str | None:
    fields = (expression or "").split()
    if not fields:
        return f"enter a cron expression; {CRON_EXAMPLE}"
    if len(fields) != 5:
        return (
            f"'{expression}' has {len(fields)} fields, not 5; {CRON_EXAMPLE}: minute, hour, day of month, month "
            "and day of week (seconds and years are not supported)"
        )
    if any(_RANDOM_FIELD.search(field) for field in fields):
        return f"'{expression}' uses a random (R) or hashed (H) field, which would move its fires; {CRON_EXAMPLE}"
    assert expression is not None  # it has fields
    try:
        croniter(expression, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError:
        return f"'{expression}' never fires (no date matches it); {CRON_EXAMPLE}"
    except (CroniterError, ValueError, KeyError) as exc:
        return f"'{expression}' is not a valid cron expression ({_which_field(fields, exc)}); {CRON_EXAMPLE}"
    return None


def _which_field(fields: list[str], exc: Exception) -> str:
    for (name, low, high), text in zip(CRON_FIELDS, fields, strict=True):
        # Numbers after '/' are steps and after '#' the n-th weekday, not values of the field.
        values = [int(n) for token in text.split(",") for n in re.findall(r"\d+", token.split("/")[0].split("#")[0])]
        for value in values:
            if not low <= value <= high:
                return f"{name} {value} is out of range {low}-{high}"
    for index, (name, _, _) in enumerate(CRON_FIELDS):
        alone = ["*"] * 5
        alone[index] = fields[index]
        try:
            croniter(" ".join(alone), datetime(2000, 1, 1)).get_next(datetime)
        except (CroniterError, ValueError, KeyError):
            return f"the {name} field '{fields[index]}' is not valid"
    return str(exc)


def _window_problems(rule: Rule) -> dict[str, str]:
    problems: dict[str, str] = {}
    for name in ("window_start", "window_end"):
        moment = getattr(rule, name)
        if moment is not None and moment.utcoffset() is None:
            problems[name] = f"{moment} has no time zone; give it one, e.g. 2026-05-01 00:00 UTC"
    if problems or rule.window_start is None or rule.window_end is None or rule.window_end > rule.window_start:
        return problems
    zone = _zone_or_none(rule.timezone) or UTC
    start, end = (_show(moment, zone) for moment in (rule.window_start, rule.window_end))
    example = _show(rule.window_start + timedelta(days=7), zone)
    problem = f"the window ends at {end}, before it starts at {start}"
    if rule.window_end == rule.window_start:
        problem = f"the window starts and ends at {start}"
    return {"window_end": f"{problem}; end it after the start, e.g. {example} for a week from {start}{_named(zone)}"}


def _show(moment: datetime, zone: tzinfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _named(zone: tzinfo) -> str:
    """Which zone a message's times are in: the schedule's, which may not be the reader's."""
    return f" (times in the schedule's zone, {zone})"


def _blackouts_problem(blackouts: tuple[str, ...]) -> str | None:
    example = "write daily ranges 'HH:MM-HH:MM' in the schedule's time zone, e.g. '08:00-18:00' or '22:00-06:00'"
    if isinstance(blackouts, str):
        return f"give a list of ranges, not one string; {example}"
    for text in blackouts:
        try:
            _parse_blackout(text)
        except ValueError as exc:
            return f"{exc}; {example}"
    covered: set[int] = set()
    for start, end in _blackout_ranges(tuple(blackouts)):
        minutes = (
            range(start // 60, end // 60) if start < end else [*range(start // 60, MINUTES_PER_DAY), *range(end // 60)]
        )
        covered.update(minutes)
    if len(covered) == MINUTES_PER_DAY:
        return (
            f"these blackouts cover the whole day, so nothing would ever fire; pause the schedule instead, or {example}"
        )
    return None


def _never_fires_problems(rule: Rule) -> dict[str, str]:
    """A rule whose every fire falls in a blackout or outside its window would be saved and never run."""
    after = (rule.window_start or DEFAULT_ANCHOR) - _EPSILON
    if next_fires(rule, after, 1):
        return {}
    unblocked = next_fires(replace(rule, blackouts=()), after, 1)
    if rule.blackouts and unblocked:
        return {
            "blackouts": "every fire of this schedule falls inside these blackouts; shorten them, e.g. '08:00-18:00'"
        }
    if rule.window_start is not None and rule.window_end is not None:
        zone = _zone_or_none(rule.timezone) or UTC
        start, end = _show(rule.window_start, zone), _show(rule.window_end, zone)
        later = next_fires(replace(rule, window_end=None, blackouts=()), after, 1)
        hint = f"end it after {_show(later[0], zone)}, its first fire" if later else "widen it"
        return {"window_end": f"no fire of this schedule falls between {start} and {end}; {hint}{_named(zone)}"}
    return {}


def _stagger_problem(rule: Rule, stagger_s: float, n_targets: int, sequence_s: float) -> str | None:
    if stagger_s < 0:
        return f"{stagger_s:g} s is negative; use 0 or more seconds, e.g. 600 (10 minutes between targets)"
    period = _shortest_period_s(rule)
    if period is None:
        return None
    plan = (n_targets - 1) * stagger_s + sequence_s
    if plan < period:
        return None
    shorten = f"shorten the profiles or fire less often, e.g. every {int(sequence_s // 60) + 1} minutes"
    if n_targets == 1:
        return f"the profiles need {sequence_s:g} s, but fires can come {period:g} s apart; {shorten}"
    said = f"{n_targets} targets {stagger_s:g} s apart"
    if sequence_s:
        said += f", each running {sequence_s:g} s of profiles,"
    said += f" need {plan:g} s, but fires can come {period:g} s apart"
    if period <= sequence_s:
        return f"{said}; no stagger fits: {shorten}"
    fits = math.ceil((period - sequence_s) / (n_targets - 1)) - 1
    example = fits // 60 * 60 if fits >= 60 else fits
    return f"{said}; the largest stagger that fits is {fits} s, e.g. {example}"


def _shortest_period_s(rule: Rule) -> float | None:
    """The shortest time between consecutive fires, read on the wall clock (a DST night can shorten one)."""
    if rule.kind == "interval":
        return rule.interval_minutes * 60.0 if rule.interval_minutes else None
    start = rule.window_start or rule.anchor or DEFAULT_ANCHOR
    walker = croniter(rule.cron, start.astimezone(ZoneInfo(rule.timezone)).replace(tzinfo=None, fold=0))
    try:
        fires = [walker.get_next(datetime) for _ in range(PERIOD_SAMPLE + 1)]
    except CroniterBadDateError:
        return None
    return min((later - earlier).total_seconds() for earlier, later in pairwise(fires))


# ----------------------------------------------------------------------------- fires


def fires_between(rule: Rule, after: datetime, until: datetime) -> list[datetime]:
    """Fires in (after, until], inside the window and outside the blackouts, in UTC."""
    _require_aware(after, until)
    return list(_fires(rule, after, until, budget=None))


def next_fires(rule: Rule, after: datetime, count: int) -> list[datetime]:
    """The next `count` fires after `after`; fewer when none come within five years (or the window ends)."""
    _require_aware(after)
    horizon = max(after, rule.window_start or after) + SEARCH_HORIZON
    return list(islice(_fires(rule, after, horizon, budget=SEARCH_CANDIDATES), max(count, 0)))


def fires_and_next(rule: Rule, after: datetime, until: datetime) -> tuple[list[datetime], datetime | None]:
    """fires_between(rule, after, until) and next_fires(rule, until, 1), from one walk of the rule."""
    _require_aware(after, until)
    horizon = max(until, rule.window_start or until) + SEARCH_HORIZON
    fires: list[datetime] = []
    for fire in _fires(rule, after, horizon, budget=SEARCH_CANDIDATES, budget_after=until):
        if fire > until:
            return fires, fire
        fires.append(fire)
    return fires, None


def window_state(rule: Rule, when: datetime) -> str:
    if rule.window_start is not None and when < rule.window_start:
        return "before"
    if rule.window_end is not None and when >= rule.window_end:
        return "after"
    return "inside"


def misfired(fire: datetime, now: datetime, grace_s: float) -> bool:
    return (now - fire).total_seconds() > grace_s


def _require_aware(*moments: datetime) -> None:
    for moment in moments:
        if moment.utcoffset() is None:
            raise ValueError(f"{moment} has no time zone; schedule maths takes aware datetimes only")


def _fires(
    rule: Rule, after: datetime, until: datetime, *, budget: int | None, budget_after: datetime | None = None
) -> Iterator[datetime]:
    """Fires in (after, until]; `budget` caps the candidates looked at (those after `budget_after`, if given)."""
    cursor = after
    if rule.window_start is not None and cursor < rule.window_start:
        cursor = rule.window_start - _EPSILON
    while True:
        for candidate in _candidates(rule, cursor):
            if budget is not None and (budget_after is None or candidate > budget_after):
                budget -= 1
                if budget < 0:
                    return
            if candidate > until or (rule.window_end is not None and candidate >= rule.window_end):
                return
            if in_blackout(rule, candidate):
                # Restart just before the blackout's end rather than walk every candidate inside it.
                try:
                    ends = blackout_end(rule, candidate)
                except ValueError:  # blackouts covering the whole day (validate refuses them): nothing fires
                    return
                assert ends is not None  # the candidate is in a blackout
                cursor = ends - _EPSILON
                break
            yield candidate
        else:
            return


def _candidates(rule: Rule, after: datetime) -> Iterator[datetime]:
    """Every fire of the rule strictly after `after`, ignoring window and blackouts, in UTC and in order."""
    if rule.kind == "interval":
        step = timedelta(minutes=rule.interval_minutes or 0)
        if step <= timedelta(0):
            raise ValueError(f"interval_minutes must be at least 1, got {rule.interval_minutes!r}")
        anchor = (rule.anchor or rule.window_start or DEFAULT_ANCHOR).astimezone(UTC)
        k = 0 if after < anchor else (after - anchor) // step + 1
        while True:
            yield anchor + k * step
            k += 1
    if rule.kind != "cron":
        raise ValueError(f"unknown schedule kind {rule.kind!r}")
    zone = ZoneInfo(rule.timezone)
    # A fold=1 `after` (the repeated hour) reads as its wall-clock time; the candidates it lets through
    # that map to the first pass are earlier than `after` and dropped below.
    walker = croniter(rule.cron, after.astimezone(zone).replace(tzinfo=None, fold=0))
    previous = after
    while True:
        try:
            local = walker.get_next(datetime)
        except CroniterBadDateError:
            return
        fire = _instants(local, zone)[0]
        # Mapping wall-clock times to instants never goes backwards, so equal means a collapsed DST gap.
        if fire > previous:
            previous = fire
            yield fire


def _instants(local: datetime, zone: ZoneInfo) -> list[datetime]:
    """The UTC instants at which the wall clock reads `local`; for a time the clocks skip, the end of the jump."""
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = local.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) != local:
        return [_jump_end(earlier=second, later=first, zone=zone)]
    return [first] if first == second else [first, second]


def _jump_end(*, earlier: datetime, later: datetime, zone: ZoneInfo) -> datetime:
    # Inside a gap fold=1 reads the time with the new offset and fold=0 with the old, so the change lies
    # between the two readings; transitions fall on whole seconds.
    low, high = math.floor(earlier.timestamp()), math.ceil(later.timestamp())
    new_offset = later.astimezone(zone).utcoffset()
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == new_offset:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)


# ----------------------------------------------------------------------------- blackouts


def in_blackout(rule: Rule, when: datetime) -> str | None:
    """The blackout range that covers `when` on the local wall clock, else None."""
    if not rule.blackouts:
        return None
    local = when.astimezone(ZoneInfo(rule.timezone))
    second = local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6
    for text, (start, end) in zip(rule.blackouts, _blackout_ranges(rule.blackouts), strict=True):
        if (start <= second < end) if start < end else (second >= start or second < end):
            return text
    return None


def blackout_end(rule: Rule, when: datetime) -> datetime | None:
    """When the blackouts covering `when` are over (overlapping ranges are followed), in UTC; None if none."""
    if not in_blackout(rule, when):
        return None
    zone = ZoneInfo(rule.timezone)
    moment = when
    # Each step moves to the end of one range; more steps than ranges would mean they cover the whole day.
    for _ in range(2 * len(rule.blackouts) + 1):
        covering = in_blackout(rule, moment)
        if covering is None:
            return moment.astimezone(UTC)
        start, end = _parse_blackout(covering)
        local = moment.astimezone(zone)
        day = local.date()
        if start > end and local.time() >= _clock(start):
            day += timedelta(days=1)
        end_local = datetime.combine(day, time()) + timedelta(seconds=end)
        moment = min(instant for instant in _instants(end_local, zone) if instant > moment)
    raise ValueError(f"the blackouts {list(rule.blackouts)} cover the whole day")


def _clock(second: int) -> time:
    return time(second // 3600, second % 3600 // 60)


@cache
def _blackout_ranges(blackouts: tuple[str, ...]) -> list[tuple[int, int]]:
    return [_parse_blackout(text) for text in blackouts]


def _parse_blackout(text: str) -> tuple[int, int]:
    """'HH:MM-HH:MM' as (start, end) seconds after local midnight; the end may be 24:00."""
    match = _BLACKOUT.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"{text!r} is not a daily range")
    start_h, start_m, end_h, end_m = (int(group) for group in match.groups())
    if start_h > 23 or start_m > 59 or end_m > 59 or end_h > 24 or (end_h == 24 and end_m):
        raise ValueError(f"{text!r} is not a time of day")
    start, end = start_h * 3600 + start_m * 60, end_h * 3600 + end_m * 60
    if start == end:
        raise ValueError(f"{text!r} starts when it ends")
    return start, end


# ----------------------------------------------------------------------------- spreading targets


def sequence_offsets(durations_s: list[float], gap_s: float = 5) -> list[float]:
    """Start offsets of profiles run one after another on one target."""
    offsets: list[float] = []
    start = 0.0
    for duration in durations_s:
        offsets.append(start)
        start += duration + gap_s
    return offsets


def stagger_offsets(
    targets: list[Target], *, stagger_s: float = 0, auto: bool = False, by_site: bool = False, gap_s: float = 5
) -> list[float]:
    """Start offsets of the targets from the fire time.

    Fixed: target i starts at i * stagger_s. Auto: in the given order, each target takes the earliest
    offset at which it keeps gap_s clear of every target already placed on its host (its site with
    by_site; a host with no site counts as a site of its own). Targets that share nothing start at 0.
    """
    if not auto:
        return [i * stagger_s for i in range(len(targets))]
    placed: dict[str, list[tuple[float, float]]] = {}
    offsets = []
    for target in targets:
        group = f"site:{target.site}" if by_site and target.site else f"host:{target.host}"
        busy = placed.setdefault(group, [])
        offset = min(
            start
            for start in [0.0, *(end + gap_s for _, end in busy)]
            if all(start + target.duration_s + gap_s <= s or start >= e + gap_s for s, e in busy)
        )
        busy.append((offset, offset + target.duration_s))
        offsets.append(offset)
    return offsets
