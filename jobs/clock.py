"""One labelled clock: which time zone a person reads times in, and how a time is written for them.

Pure: standard library only. The zone is the person's choice (Preferences.time_zone), else the one their browser
reports (a cookie set by static/js/clock.js), else UTC; jobs.middleware activates it for each page. Every time a
person reads says its zone and uses the 24-hour clock: "2026-11-25 21:24:52 CET".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

COOKIE = "benchweb_tz"
SECONDS = "%Y-%m-%d %H:%M:%S"
MINUTES = "%Y-%m-%d %H:%M"
# The areas of the IANA database people live in; the rest are aliases kept for old systems (US/Eastern, EST5EDT).
_AREAS = ("Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific")
# How stored texts (run explanations) write a time: in UTC, labelled, so a page can show it in the reader's zone.
_UTC_TEXT = re.compile(r"\b(\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?) UTC\b")

Source = Literal["preference", "browser", "default"]


@dataclass(frozen=True)
class Clock:
    """The zone a page is drawn in, where it came from, and the zone the browser reported (for the preferences
    page's "Browser's zone (currently X)")."""

    zone: ZoneInfo
    source: Source
    browser: str = ""

    @property
    def name(self) -> str:
        return self.zone.key


def zone_or_none(name: str | None) -> ZoneInfo | None:
    if not name or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        return None


def choose(preference: str | None, browser: str | None) -> Clock:
    """The person's chosen zone wins; then the browser's; then UTC. A name zoneinfo does not know counts as none."""
    reported = zone_or_none(browser)
    browser_name = reported.key if reported else ""
    chosen = zone_or_none(preference)
    if chosen:
        return Clock(chosen, "preference", browser_name)
    if reported:
        return Clock(reported, "browser", browser_name)
    return Clock(ZoneInfo("UTC"), "default", "")


def label(moment: datetime, zone: tzinfo) -> str:
    """The zone's abbreviation at that moment (CET, CEST, EST); zones without one get their offset: UTC+04."""
    name = moment.astimezone(zone).strftime("%Z")
    return f"UTC{name}" if name[:1] in "+-" else name


def show(moment: datetime, zone: tzinfo, pattern: str = SECONDS) -> str:
    """24-hour time with its zone: 2026-11-25 21:24:52 CET."""
    local = moment.astimezone(zone)
    return f"{local.strftime(pattern)} {label(local, zone)}"


def show_also(moment: datetime, here: tzinfo, there: tzinfo, pattern: str = MINUTES) -> str:
    """The moment in a second zone (a schedule's), or "" when it reads the same there as here."""
    near, far = moment.astimezone(here), moment.astimezone(there)
    if near.utcoffset() == far.utcoffset() and label(near, here) == label(far, there):
        return ""
    return show(moment, there, pattern)


def in_zone(text: str, zone: tzinfo) -> str:
    """A stored text with its UTC times ("… at 2026-11-25 20:24:52 UTC") rewritten in the reader's zone."""
    if str(zone) == "UTC":
        return text

    def local(match: re.Match[str]) -> str:
        written = match.group(1)
        pattern = SECONDS if len(written) > 16 else MINUTES
        moment = datetime.strptime(written, pattern).replace(tzinfo=UTC)
        return show(moment, zone, pattern)

    return _UTC_TEXT.sub(local, text)


def utc_text(moment: datetime, pattern: str = SECONDS) -> str:
    """How a stored text writes a time (see in_zone)."""
    return show(moment, ZoneInfo("UTC"), pattern)


@lru_cache(maxsize=64)
def abbreviations(zone: ZoneInfo) -> dict[int, str]:
    """UTC offset in minutes -> the zone's abbreviation, as used since 2000 and for the next two years, so the
    charts (static/js/charts.js) label a time exactly as the page beside them does."""
    out: dict[int, str] = {}
    moment = datetime(2000, 1, 1, tzinfo=UTC)
    end = datetime.now(UTC) + timedelta(days=730)
    while moment < end:
        offset = moment.astimezone(zone).utcoffset() or timedelta(0)
        out[int(offset.total_seconds() // 60)] = label(moment, zone)
        moment += timedelta(days=7)
    return out


@lru_cache(maxsize=1)
def zone_names() -> list[str]:
    """The IANA names a person may pick, sorted; UTC first."""
    names = sorted(name for name in available_timezones() if name.split("/", 1)[0] in _AREAS and "/" in name)
    return ["UTC", *names]


def utc_hour(hour: int, zone: tzinfo, at: datetime) -> str:
    """A UTC hour of the day (what the day rollups count by) on the zone's clock at the offset it had at `at`:
    "05:30–06:30 IST" for hour 0 in Asia/Kolkata. A half-hour zone's hour starts at :30; across a daylight-saving
    change the runs on the other side of it are an hour off (the rollups keep UTC hours only)."""
    start = datetime.combine(at.astimezone(UTC).date(), datetime.min.time(), UTC) + timedelta(hours=hour)
    end = start + timedelta(hours=1)
    offset = at.astimezone(zone).utcoffset() or timedelta(0)
    first, last = ((moment + offset).strftime("%H:%M") for moment in (start, end))
    return f"{first}–{last} {label(at, zone)}"
