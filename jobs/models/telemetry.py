"""A host's telemetry: one row a second while it has running runs, read by the host's observation step
(jobs/runs/watching.py, jobs/telemetry/proc.py). A run's telemetry is its host's rows between its start and its end;
its verdicts (Run.verdicts) are judged from them when it is collected."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models

from jobs.models import partitions
from jobs.models.hosts import Host
from jobs.models.runs import Run


class HostSample(models.Model):
    """One second of a host: its CPU, memory, load, pressure and its runs' devices (jobs/telemetry/proc.py's
    sample shape, the time in `at`)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="telemetry")
    at = models.DateTimeField(help_text="When the second ended, on the worker's clock.")
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["host", "at"]
        indexes = [models.Index(fields=["host", "at"], name="hostsample_host_at")]

    def __str__(self) -> str:
        return f"host {self.host_id} at {self.at:%Y-%m-%d %H:%M:%S}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The second's month partition (and the next) made before the row arrives, once a month per process.
        partitions.ensure_ahead("jobs_hostsample", self.at)
        super().save(*args, **kwargs)

    @classmethod
    def of_run(cls, run: Run, *, until: datetime | None = None) -> list[dict[str, Any]]:
        """The host's seconds during `run` (from its start to its end, or `until`), each with `t_s`: seconds
        since the run's start, as its IOPS samples count them."""
        if run.started_at is None:
            return []
        end = run.finished_at or until
        rows = cls.objects.filter(host_id=run.disk.host_id, at__gt=run.started_at)
        if end is not None:
            rows = rows.filter(at__lte=end)
        start = run.started_at.timestamp()
        return [data | {"t_s": round(at.timestamp() - start, 3)} for at, data in rows.values_list("at", "data")]
