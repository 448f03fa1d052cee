"""Times for people, in the reader's zone (activated by jobs.middleware), 24-hour and labelled with the zone.

{{ run.created_at|when }}            -> <time datetime="2026-11-25T21:24:52+01:00">2026-11-25 21:24:52 CET</time>
{{ t.expires_at|when:"minutes" }}    -> the same without seconds
{{ bar.start|when_text:"weekday" }}  -> Wed 25 Nov 21:24 CET, plain text for title attributes
{{ fire|when_in:schedule.timezone }} -> the time in another zone (the schedule's), empty when it reads the same
{{ run.explanation|local_times }}    -> a stored text's "… 20:24:52 UTC" in the reader's zone
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs import clock

register = template.Library()

PATTERNS = {
    "seconds": clock.SECONDS,
    "minutes": clock.MINUTES,
    "weekday": "%a %d %b %H:%M",
    "time": "%H:%M:%S",
    "short_time": "%H:%M",
}


def _zone() -> tzinfo:
    return timezone.get_current_timezone()


@register.filter
def when(value: datetime | None, precision: str = "seconds") -> SafeString | str:
    if not isinstance(value, datetime):
        return ""
    local = value.astimezone(_zone())
    return format_html(
        '<time datetime="{}">{}</time>', local.isoformat(timespec="seconds"), when_text(value, precision)
    )


@register.filter
def when_text(value: datetime | None, precision: str = "seconds") -> str:
    if not isinstance(value, datetime):
        return ""
    return clock.show(value, _zone(), PATTERNS[precision])


@register.filter
def when_in(value: datetime | None, zone_name: str) -> str:
    """The time in another zone, for "(02:30 CET in the schedule's zone)"; empty when that zone reads the same
    as the reader's at that moment, or is unknown."""
    zone = clock.zone_or_none(zone_name)
    if not isinstance(value, datetime) or zone is None:
        return ""
    return clock.show_also(value, _zone(), zone)


@register.filter
def local_times(text: str | None) -> str:
    return clock.in_zone(text or "", _zone())
