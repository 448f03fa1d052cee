"""The import forms."""

from __future__ import annotations

import re
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from jobs.models import Disk, Team
from jobs.widgets import MomentInput

# Pasted or uploaded output travels back to the browser for confirmation, and Django refuses form bodies
# above DATA_UPLOAD_MAX_MEMORY_SIZE (16 MiB, benchweb/settings.py); larger outputs go through `import_results`.
MAX_IMPORT_CHARS = 2_000_000


MAX_IMPORT_FILES = 20


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = data if isinstance(data, list | tuple) else [data] if data else []
        return [super(MultipleFileField, self).clean(file, initial) for file in files]


def _not_future(moment: Any) -> Any:
    if moment and moment > timezone.now():
        raise ValidationError("This is in the future: give when the run finished, or leave it empty for now.")
    if moment and moment.year < 1970:  # importing.import_result refuses it too; here it is shown on the field
        raise ValidationError("This is before 1970: give when the run finished, or leave it empty for now.")
    return moment


class ImportTargetForm(forms.Form):
    """What both import steps share: the disk, the date and the tool."""

    disk = forms.ModelChoiceField(queryset=Disk.objects.none(), empty_label="— choose a disk —")
    finished_at = forms.DateTimeField(
        label="Finished at",
        required=False,
        validators=[_not_future],
        widget=MomentInput(),
        help_text="When the run ended, in your time zone. Empty: now.",
    )
    tool = forms.ChoiceField(
        choices=[("auto", "Recognise it"), ("fio", "fio (JSON, text or terse)"), ("ndisk64", "ndisk64")],
        initial="auto",
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        disk_field = cast("forms.ModelChoiceField[Disk]", self.fields["disk"])
        disk_field.queryset = Disk.objects.filter(team=team).select_related("host")
        only = list(disk_field.queryset.values_list("pk", flat=True)[:2])
        if len(only) == 1 and not self.initial.get("disk"):  # a team with one disk has nothing to choose
            self.initial["disk"] = only[0]
        if "finished_at" in self.fields:  # read in the reader's zone (jobs.middleware); say which
            zone = timezone.get_current_timezone()
            self.fields["finished_at"].help_text = f"When the run ended, in your time zone ({zone}). Empty: now."


class ImportForm(ImportTargetForm):
    # The metaclass moves declared fields into base_fields, so this does not shadow BaseForm.files.
    files = MultipleFileField(  # type: ignore[assignment]
        label="Files", required=False, help_text=f"Up to {MAX_IMPORT_FILES} files; each becomes one result."
    )
    text = forms.CharField(
        label="Or paste the output",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        help_text="fio JSON (--output-format=json), fio's text report, terse lines, or an ndisk64 report.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        files, text = cleaned.get("files") or [], cleaned.get("text") or ""
        if not files and not text.strip() and "files" not in self.errors:
            self.add_error("text", "Choose one or more files, or paste the tool's output here.")
        if len(files) > MAX_IMPORT_FILES:
            self.add_error("files", f"Choose at most {MAX_IMPORT_FILES} files at a time.")
        sources = [("pasted text", text)] if text.strip() else []
        for upload in files:
            raw = upload.read(MAX_IMPORT_CHARS * 4 + 1)
            try:
                sources.append((upload.name, raw.decode("utf-8")))
            except UnicodeDecodeError:
                self.add_error("files", f"{upload.name} is not text (UTF-8): upload the tool's output file itself.")
        total = sum(len(body) for _, body in sources)
        if total > MAX_IMPORT_CHARS:
            self.add_error(
                "files" if files else "text",
                f"That is {total:,} characters; the browser import takes up to {MAX_IMPORT_CHARS:,} at a time. "
                "Import fewer files at once, or large outputs with `manage.py import_results FILE --disk ID`.",
            )
        cleaned["sources"] = [(name, normalise_newlines(body)) for name, body in sources]
        return cleaned


# Several outputs pasted in one box are separated by a line of four or more hyphens and nothing else, which no fio
# or ndisk64 report prints (ndisk64's "---->" line goes on).
OUTPUT_SEPARATOR = re.compile(r"^-{4,}[ \t]*$", re.MULTILINE)


def split_outputs(text: str) -> list[str]:
    """The outputs pasted in one text, in order, without the blank ones around the separators."""
    return [part.strip("\n") for part in OUTPUT_SEPARATOR.split(normalise_newlines(text)) if part.strip()]


class SweepImportForm(ImportTargetForm):
    """Several outputs, one a point of the sweep: files, or texts pasted one after another with ---- between."""

    files = MultipleFileField(  # type: ignore[assignment]
        label="Files", required=False, help_text=f"Up to {MAX_IMPORT_FILES} files, one output each."
    )
    text = forms.CharField(
        label="Or paste the outputs",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}),
        help_text="One output after another, with a line of four hyphens (----) between two outputs.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        sources = [(f"pasted output {n}", part) for n, part in enumerate(split_outputs(cleaned.get("text") or ""), 1)]
        files = cleaned.get("files") or []
        if len(files) > MAX_IMPORT_FILES:
            self.add_error("files", f"Choose at most {MAX_IMPORT_FILES} files at a time.")
        for upload in files:
            try:
                sources.append((upload.name[:200], upload.read(MAX_IMPORT_CHARS * 4 + 1).decode("utf-8")))
            except UnicodeDecodeError:
                self.add_error("files", f"{upload.name} is not text (UTF-8): upload the tool's output file itself.")
        if len(sources) < 2 and not self.errors:
            self.add_error("text", "Give at least two outputs, one a point: files, or texts with a ---- line between.")
        total = sum(len(body) for _, body in sources)
        if total > MAX_IMPORT_CHARS:
            self.add_error(
                "files" if files else "text",
                f"That is {total:,} characters; the browser import takes up to {MAX_IMPORT_CHARS:,} at a time.",
            )
        cleaned["sources"] = [(name, normalise_newlines(body)) for name, body in sources]
        return cleaned


def normalise_newlines(text: str) -> str:
    # Browsers send a textarea's line breaks as CRLF, so the confirmation step would otherwise store different
    # text from the one it showed.
    return text.replace("\r\n", "\n").replace("\r", "\n")


class GroupTargetForm(ImportTargetForm):
    """What a group import's save step takes besides the output: the date and the tool (each client's disk is chosen
    on the confirmation, one select a client)."""

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, team=team, **kwargs)
        del self.fields["disk"]
        self.fields[
            "finished_at"
        ].help_text += " The clients are taken to have started together; the longest ends then."


class GroupImportForm(ImportForm):
    """One output of fio --client, a file or pasted; its clients' disks are chosen on the confirmation."""

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, team=team, **kwargs)
        del self.fields["disk"]
        self.fields["files"].label = "File"
        self.fields["files"].help_text = "The output of fio --client (JSON, json+ or the text report)."
        self.fields["text"].help_text = "Or paste it: fio --client's JSON or its text report."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if len(cleaned.get("sources") or []) > 1:
            self.add_error("files", "Give one output of fio --client: one file, or the text pasted, not both.")
        return cleaned
