"""The one date-and-time picker of the forms: a text field read as "2026-11-25 21:24", 24-hour.

A browser's <input type="datetime-local"> (and type="time") writes its value in the browser's locale: AM/PM in
Chromium under en-US, whatever the page's lang says, beside times the pages write 24-hour. This field is plain
text in the page's own format; Django reads "2026-11-25 21:24" and "2026-11-25T21:24" alike, in the reader's zone
(jobs.middleware), and the page beside the field names that zone.
"""

from __future__ import annotations

from typing import Any

from django import forms

FORMAT = "%Y-%m-%d %H:%M"
# What the field takes: a date, a space or T, a 24-hour time with or without seconds.
PATTERN = r"\d{4}-\d{2}-\d{2}[ T]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?"
ATTRS = {"pattern": PATTERN, "placeholder": "2026-11-25 21:24", "title": "YYYY-MM-DD HH:MM, 24-hour",
         "autocomplete": "off", "spellcheck": "false", "class": "moment"}  # fmt: skip


class MomentInput(forms.DateTimeInput):
    input_type = "text"

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs={**ATTRS, **(attrs or {})}, format=FORMAT)
