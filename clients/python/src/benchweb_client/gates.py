"""The --gate conditions and how a finished run is judged by them, from the run as GET /api/v1/runs/{id}/ gives it
(and, for `baseline`, the product's statistical compare). Pure: no HTTP here.

    promise[:PCT]     total IOPS below the disk's promise (the limit at the run's block size) by more than PCT %
    baseline[:PCT]    the disk's latest BASELINE_RUNS runs of the profile (this one among them) significantly slower
                      than its runs before them, by more than PCT % (default 0): the product's compare/stats
    steady            the run's steady-state stamp says not steady
    fresh-blocks      the run carries a "Fresh blocks" warning
    client-bound, …   the run has that verdict (any of benchweb's verdict kinds; `verdicts`: any verdict)
    p99<=2ms          the completion-latency percentile (worse direction) above the ceiling (us, ms or s)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PASS, FAIL, SKIP = "pass", "fail", "skip"
BASELINE_RUNS = 5  # the runs a side benchweb's statistical compare needs (jobs/analysis/stats.py MIN_RUNS)
VERDICT_KINDS = ("client_bound", "cache_suspected", "device_saturated", "throttled_at_promise", "stripe_imbalance",
                 "host_under_pressure")  # fmt: skip
PERCENTILES = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p99.9": "p99_9"}
UNITS = {"us": 1.0, "µs": 1.0, "ms": 1000.0, "s": 1_000_000.0}
LATENCY = re.compile(r"(p50|p90|p95|p99\.9|p99)\s*<=\s*([0-9]+(?:\.[0-9]+)?)\s*(us|µs|ms|s)")


class GateError(ValueError):
    pass


@dataclass(frozen=True)
class Gate:
    kind: str  # promise, baseline, steady, fresh-blocks, verdict, latency
    text: str  # as typed: names the gate in every report
    percent: float = 0.0
    verdict: str = ""
    percentile: str = ""
    ceiling_us: float = 0.0


@dataclass(frozen=True)
class Check:
    gate: str
    status: str  # pass, fail, skip
    message: str


def parse(text: str) -> Gate:
    spec = text.strip()
    name, _, argument = spec.partition(":")
    if match := LATENCY.fullmatch(spec):
        return Gate("latency", spec, percentile=match[1], ceiling_us=float(match[2]) * UNITS[match[3]])
    if name in ("promise", "baseline"):
        try:
            percent = float(argument) if argument else (10.0 if name == "promise" else 0.0)
        except ValueError:
            raise GateError(f"--gate {spec}: give a percentage after the colon, e.g. {name}:10") from None
        return Gate(name, spec, percent=percent)
    if argument:
        raise GateError(f"--gate {spec}: {name} takes no value")
    if name in ("steady", "fresh-blocks"):
        return Gate(name, spec)
    kind = name.replace("-", "_")
    if kind in VERDICT_KINDS or kind == "verdicts":
        return Gate("verdict", spec, verdict=kind)
    raise GateError(
        f"--gate {spec}: not a gate; give promise[:PCT], baseline[:PCT], steady, fresh-blocks, verdicts, "
        f"{', '.join(k.replace('_', '-') for k in VERDICT_KINDS)} or a latency ceiling like p99<=2ms"
    )


def total_iops(run: dict[str, Any]) -> float | None:
    return ((run.get("summary") or {}).get("total") or {}).get("iops")


def latency_us(run: dict[str, Any], percentile: str) -> float | None:
    """The percentile in µs of the worse direction the run did (a mixed job's slower side)."""
    summary, key = run.get("summary") or {}, PERCENTILES[percentile]
    found = [((summary.get(d) or {}).get("clat_us") or {}).get(key) for d in ("read", "write")]
    values = [v for v in found if v is not None]
    return max(values) if values else None


def promise_iops(run: dict[str, Any]) -> float | None:
    snapshot = run.get("limits_snapshot") or {}
    if snapshot.get("error"):
        return None
    value = snapshot.get("effective_iops")
    return value if value is not None else snapshot.get("iops")


def check(gate: Gate, run: dict[str, Any], compared: dict[str, Any] | None = None) -> Check:
    judge = {"promise": _promise, "steady": _steady, "fresh-blocks": _fresh, "verdict": _verdict,
             "latency": _latency}.get(gate.kind)  # fmt: skip
    if judge is not None:
        return judge(gate, run)
    return _baseline(gate, compared or {})


def _promise(gate: Gate, run: dict[str, Any]) -> Check:
    measured, promised = total_iops(run), promise_iops(run)
    if promised is None:
        why = (run.get("limits_snapshot") or {}).get("error") or "the disk's spec gives no limits"
        return Check(gate.text, SKIP, f"no promise to judge against ({why})")
    if measured is None:
        return Check(gate.text, FAIL, "the run reported no IOPS")
    short = (promised - measured) / promised * 100 if promised else 0.0
    said = f"{iops_text(measured)} IOPS is {abs(short):.1f} % {'below' if short > 0 else 'above'} the promise of " \
           f"{iops_text(promised)} IOPS"  # fmt: skip
    if short > gate.percent:
        return Check(gate.text, FAIL, f"{said} (allowed {gate.percent:g} % below)")
    return Check(gate.text, PASS, said)


def _steady(gate: Gate, run: dict[str, Any]) -> Check:
    stamp = run.get("steady_state") or {}
    state, why = stamp.get("state"), stamp.get("why") or ""
    if state == "steady":
        return Check(gate.text, PASS, "steady state reached")
    if state == "not_steady":
        return Check(gate.text, FAIL, f"not steady: {why}".rstrip(": "))
    return Check(gate.text, SKIP, f"steady state not checked: {why or 'no stamp on the run'}")


def _fresh(gate: Gate, run: dict[str, Any]) -> Check:
    fresh = [w for w in run.get("warnings") or [] if str(w).startswith("Fresh blocks")]
    if fresh:
        return Check(gate.text, FAIL, str(fresh[0]).removeprefix("Fresh blocks: ").rstrip("."))
    return Check(gate.text, PASS, "no fresh-blocks warning")


def _verdict(gate: Gate, run: dict[str, Any]) -> Check:
    verdicts = run.get("verdicts")
    if verdicts is None:
        return Check(gate.text, SKIP, "the run was not judged (no verdicts)")
    against = [v for v in verdicts if gate.verdict in ("verdicts", v.get("kind"))]
    if against:
        kind = str(against[0].get("kind")).replace("_", "-")
        text = str(against[0].get("text") or kind)
        # The product's sentence names its kind first ("client-bound: CPU 3 …"), as the gate's name already does.
        return Check(gate.text, FAIL, text.removeprefix(f"{kind}: ") if gate.verdict != "verdicts" else text)
    return Check(gate.text, PASS, f"no {gate.verdict.replace('_', '-')} verdict")


def _latency(gate: Gate, run: dict[str, Any]) -> Check:
    found = latency_us(run, gate.percentile)
    if found is None:
        return Check(gate.text, FAIL, f"the run reported no {gate.percentile} latency")
    said = f"{gate.percentile} {latency_text(found)} (ceiling {latency_text(gate.ceiling_us)})"
    return Check(gate.text, FAIL if found > gate.ceiling_us else PASS, said)


def _baseline(gate: Gate, compared: dict[str, Any]) -> Check:
    if not compared:
        return Check(gate.text, SKIP, "no baseline compared")
    text, verdict, percent = compared.get("text") or "", compared.get("verdict"), compared.get("percent")
    if verdict == "significant" and percent is not None and percent < -gate.percent:
        return Check(gate.text, FAIL, f"the latest {BASELINE_RUNS} runs are slower than the ones before: {text}")
    if verdict == "not_enough":
        left_out = sum((compared.get(side) or {}).get("left_out_unsteady") or 0 for side in ("a", "b"))
        why = f" ({left_out} not steady left out)" if left_out else ""
        return Check(gate.text, SKIP, f"not judged: {text}{why}")
    return Check(gate.text, PASS, text)


def iops_text(value: float) -> str:
    return f"{value:,.0f}"


def latency_text(us: float) -> str:
    if us >= 1_000_000:
        return f"{us / 1_000_000:.3g} s"
    if us >= 1000:
        return f"{us / 1000:.3g} ms"
    return f"{us:.3g} µs"
