"""A disk's outcome in one `benchweb run`: its run, the gates' checks, and PASS, FAIL or ERROR with the reason a
person reads first; and the exit status of them all (0 pass, 1 a gate failed, 2 could not run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchweb_client import gates

PASSED, FAILED, ERRORED = "PASS", "FAIL", "ERROR"
EXIT = {PASSED: 0, FAILED: 1, ERRORED: 2}


@dataclass
class Outcome:
    disk: str  # host:label as the person knows it
    disk_id: int
    run: dict[str, Any] | None
    url: str
    checks: list[gates.Check] = field(default_factory=list)
    error: str = ""  # why it could not run: the product's explanation

    @property
    def result(self) -> str:
        if self.error:
            return ERRORED
        return FAILED if any(c.status == gates.FAIL for c in self.checks) else PASSED

    @property
    def reason(self) -> str:
        if self.error:
            return self.error
        failed = [c for c in self.checks if c.status == gates.FAIL]
        shown = failed or self.checks
        if not shown:
            iops = gates.total_iops(self.run or {})
            return f"{gates.iops_text(iops)} IOPS" if iops is not None else "succeeded"
        return "; ".join(f"{c.gate}: {c.message}" for c in shown)

    def line(self) -> str:
        return f"disk {self.disk}: {self.result} {self.reason}"

    def as_json(self) -> dict[str, Any]:
        run = self.run or {}
        return {
            "disk": self.disk, "disk_id": self.disk_id, "result": self.result, "reason": self.reason,
            "run": {"id": run.get("id"), "url": self.url, "state": run.get("state"),
                    "explanation": run.get("explanation")} if run else None,
            "iops": gates.total_iops(run), "p99_us": gates.latency_us(run, "p99"),
            "gates": [{"gate": c.gate, "status": c.status, "message": c.message} for c in self.checks],
        }  # fmt: skip


def could_not_run(run: dict[str, Any]) -> str:
    """The product's own reason a run that ended without success did not measure: its state and explanation."""
    return f"run {run['id']} {run['state']}: {run.get('explanation') or 'no explanation given'}"


def exit_status(outcomes: list[Outcome]) -> int:
    return max((EXIT[o.result] for o in outcomes), default=0)
