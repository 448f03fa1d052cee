"""The "Share…" form on the disk and Compare pages: how long the link lasts. What it shows comes with it as
hidden fields (the disk, or the Compare page's query) and is checked by jobs/shares/sharing.py."""

from __future__ import annotations

from django import forms

from jobs.models.sharing import DEFAULT_DAYS
from jobs.shares.sharing import EXPIRY_CHOICES


class ShareForm(forms.Form):
    expires_in_days = forms.TypedChoiceField(
        label="Expires after",
        choices=EXPIRY_CHOICES,
        coerce=int,
        initial=DEFAULT_DAYS,
        error_messages={"invalid_choice": "Choose how long the link lasts: 1, 7, 30 or 90 days."},
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("auto_id", "share_%s")  # the pages hold other forms with fields of their own
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
