"""Which alert conditions hold: each kind's check, the hooks that call them where things happen, and the
minute's sweep.

The hooks run after the transaction that made the event commits (a run finished and its result recorded, a
fire skipped, a key refused or approved), so a check reads what was written. They raise as any code does: the
callers enter them through the alert path's one boundary (jobs/alerts/boundary.py `after_commit`), which logs an
alert that could not be judged, and the run, tick or connection that called goes on. The sweep
(`jobs.alerts_sweep`, every minute, or every BENCHWEB_ALERTS_SWEEP_SECONDS) judges stale disks, which no event
announces, and is the safety net for a hook that was missed (a worker killed between the commit and the check):
it judges every unresolved alert again and the failures and skipped fires of the last minutes."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max
from django.utils import timezone

from jobs import clock, scheduling, ssh
from jobs.alerts.boundary import never_raise
from jobs.alerts.lifecycle import Found, clear, raise_alert, unresolved_among
from jobs.models import Alert, AlertRule, ChangePoint, Disk, Host, Run, RunResult, RunSet, Schedule
from jobs.results.compliance import DEFAULT_TOLERANCE
from jobs.sets import group_history

Kind = Alert.Kind

FAILED = (Run.State.FAILED, Run.State.ERROR, Run.State.LOST)
# A stale disk gets this much beyond its schedule's N-th fire: the run of that fire has to finish too.
STALE_SLACK = timedelta(minutes=15)
# The sweep looks again at failures and skipped fires this far back (a hook missed by a killed worker).
LOOKBACK = timedelta(minutes=10)
# The sweep's look at the key a host with a host-key alert presents: short, a host that does not answer waits.
HOST_KEY_SCAN_TIMEOUT_S = 5.0


# ----------------------------------------------------------------------------- hooks


def run_finished(run_id: int) -> None:
    """After a run reached a final state (and a succeeded one's result and change points were stored)."""
    # Not its output: a 120 s fio run's is ~900 KB, and no check reads it.
    run = Run.objects.select_related("disk__host", "schedule").defer(*Run.BULKY_FIELDS).filter(pk=run_id).first()
    if run is None or not run.is_final:
        return
    if run.trigger == Run.Trigger.IMPORT:
        _judge_series(run)  # an imported run may be older than the series' latest: judged the long way
        return
    disk, name = run.disk, run.profile_name
    scheduled = run.schedule if run.schedule and run.trigger == Run.Trigger.SCHEDULE else None
    # Every run of a fleet ends here: the conditions with an alert unresolved are read once, and a check whose
    # only outcome for this run is to clear an alert that is not there asks nothing more.
    kinds = (Kind.RUN_FAILED, Kind.BELOW_PROMISE, Kind.REGRESSION, Kind.RUN_VERDICT)
    conditions = {kind: _series(kind, disk, name) for kind in kinds} | {Kind.STALE: _stale_condition(disk.pk)}
    if scheduled:
        conditions[Kind.SCHEDULE_SKIPPED] = _skipped_condition(scheduled.pk)
    unresolved = unresolved_among(disk.team_id, conditions.values())
    if scheduled:
        schedule_skipped(scheduled, unresolved=unresolved)
    if run.state != Run.State.SUCCEEDED:
        run_failed(disk, name, unresolved=unresolved)
        return
    # This run is its series' latest: it succeeded, so run_failed and stale can only clear; it is the latest
    # judged run and the latest result.
    if conditions[Kind.RUN_FAILED] in unresolved:
        run_failed(disk, name, unresolved=unresolved)
    if conditions[Kind.STALE] in unresolved:
        stale(disk)
    if conditions[Kind.BELOW_PROMISE] in unresolved or _below_promise_now(run):
        below_promise(disk, name, unresolved=unresolved)
    regression(disk, name, unresolved=unresolved)
    against = [v for v in run.verdicts or [] if v.get("kind") in ALERTING_VERDICTS]
    if conditions[Kind.RUN_VERDICT] in unresolved or against:
        run_verdict(disk, name, unresolved=unresolved)


def _judge_series(run: Run) -> None:
    """Every check of the run's series, each reading what it needs."""
    run_failed(run.disk, run.profile_name)
    if run.schedule and run.trigger == Run.Trigger.SCHEDULE:
        schedule_skipped(run.schedule)
    if run.state == Run.State.SUCCEEDED:
        below_promise(run.disk, run.profile_name)
        regression(run.disk, run.profile_name)
        run_verdict(run.disk, run.profile_name)
        stale(run.disk)


def _below_promise_now(run: Run) -> bool:
    """Whether the run's result may be one of a run of results below the promise (measured below it, or no result
    to say): with a result within it or no promise, below_promise can only clear."""
    result = RunResult.objects.filter(run_id=run.pk).values_list("total_iops", "limit_iops").first()
    if result is None:
        return True
    iops, limit = result
    return limit is not None and limit > 0 and iops is not None and iops < limit * (1 - DEFAULT_TOLERANCE / 100)


def series_recorded(disk_id: int, names: Iterable[str]) -> None:
    """A set recorded the members that stand for it under series of their own (a sweep's knees): judged as a
    succeeded run's series is."""
    disk = Disk.objects.select_related("host").filter(pk=disk_id).first()
    if disk is None:
        return
    for name in names:
        below_promise(disk, name)
        regression(disk, name)
    stale(disk)


def group_ended(run_set_id: int) -> None:
    """After a synchronised group ended (its result stored): its total against its limit and its members' spread."""
    group = RunSet.objects.select_related("disk__host").filter(pk=run_set_id, kind=RunSet.Kind.GROUP).first()
    if group is None or group.state != RunSet.State.SUCCEEDED:
        return  # a partial or cancelled group's totals leave members out: its failed members alert on their own
    group_below_promise(group)
    group_spread(group)


def fires_skipped(schedule_ids: Iterable[int]) -> None:
    for schedule in Schedule.objects.filter(pk__in=set(schedule_ids)):
        schedule_skipped(schedule)


def series_failed(pairs: Iterable[tuple[int, str]]) -> None:
    """Runs the tick made already failed (a target or profile that changed since the schedule was saved)."""
    pairs = set(pairs)
    disks = Disk.objects.select_related("host").in_bulk({disk_id for disk_id, _ in pairs})
    for disk_id, profile_name in pairs:
        if disk := disks.get(disk_id):
            run_failed(disk, profile_name)


def host_key_refused(host: Host, presented: str, during: str) -> None:
    """The host presented another key than the approved one (a run, a test, a scan)."""
    raise_alert(Found(
        team_id=host.team_id, kind=Kind.HOST_KEY_CHANGED, condition=_host_key_condition(host.pk),
        title=f"Host key changed: {host.name}",
        summary=(
            f"{host.name} ({host.address}:{host.port}) presented the key {presented or '(none)'} during {during}, "
            f"not the approved {host.host_key_fingerprint}. Nothing runs on it until a person compares the "
            "fingerprint and approves a key on the host page."
        ),
        host_id=host.pk,
    ))  # fmt: skip


def host_key_approved(host: Host) -> None:
    clear(host.team_id, _host_key_condition(host.pk), f"a key was approved: {host.host_key_fingerprint}")


def host_key_presented(host: Host, during: str) -> None:
    """The host presented its approved key again (a login, a test, a scan): the condition no longer holds."""
    clear(
        host.team_id, _host_key_condition(host.pk),
        f"{host.name} presented the approved key {host.host_key_fingerprint} again during {during}",
    )  # fmt: skip


def _host_key_condition(host_id: int) -> str:
    return f"host_key_changed:host={host_id}"


# ----------------------------------------------------------------------------- the kinds


def _series(kind: str, disk: Disk, profile_name: str) -> str:
    return f"{kind}:disk={disk.pk}:profile={profile_name}"


def _workload(profile_name: str) -> str:
    return profile_name or "no profile"


def run_failed(disk: Disk, profile_name: str, *, unresolved: Collection[str] | None = None) -> None:
    """Holds while the last finished run of the workload on the disk failed, erred or was lost."""
    last = (
        Run.objects.filter(disk=disk, profile_name=profile_name, state__in=(Run.State.SUCCEEDED, *FAILED))
        .exclude(trigger=Run.Trigger.IMPORT)
        .order_by("-finished_at", "-pk")
        .only("pk", "state", "explanation", "finished_at", "profile_id")
        .first()
    )
    condition = _series(Kind.RUN_FAILED, disk, profile_name)
    if last is None:
        return
    ended = clock.utc_text(last.finished_at) if last.finished_at else "an unknown time"
    if last.state == Run.State.SUCCEEDED:
        clear(disk.team_id, condition, f"run #{last.pk} of {_workload(profile_name)} succeeded at {ended}",
              unresolved=unresolved)  # fmt: skip
        return
    raise_alert(Found(
        team_id=disk.team_id, kind=Kind.RUN_FAILED, condition=condition,
        title=f"Run failed: {_workload(profile_name)} on {disk}",
        summary=f"Run #{last.pk} ended {last.state} at {ended}: {last.explanation or 'no reason was recorded'}",
        host_id=disk.host_id, disk_id=disk.pk, profile_id=last.profile_id, profile_name=profile_name,
        run_ids=[last.pk],
    ))  # fmt: skip


# The verdicts that say the number may not be the disk's; "throttled at the promise" is the cloud's cap, expected.
ALERTING_VERDICTS = ("client_bound", "cache_suspected", "device_saturated", "stripe_imbalance", "host_under_pressure")


def run_verdict(disk: Disk, profile_name: str, *, unresolved: Collection[str] | None = None) -> None:
    """Holds while the last judged run of the workload on the disk has a verdict against its number; clears with a
    judged run that has none (docs/user-guide/verdicts.md)."""
    last = (
        Run.objects.filter(disk=disk, profile_name=profile_name, state=Run.State.SUCCEEDED, verdicts__isnull=False)
        .order_by("-finished_at", "-pk")
        .only("pk", "verdicts", "finished_at", "profile_id")
        .first()
    )
    if last is None:
        return
    condition = _series(Kind.RUN_VERDICT, disk, profile_name)
    against = [v for v in last.verdicts or [] if v.get("kind") in ALERTING_VERDICTS]
    if not against:
        clear(disk.team_id, condition, f"run #{last.pk} of {_workload(profile_name)} measured the disk",
              unresolved=unresolved)  # fmt: skip
        return
    raise_alert(Found(
        team_id=disk.team_id, kind=Kind.RUN_VERDICT, condition=condition,
        title=f"Not the disk's number? {_workload(profile_name)} on {disk}",
        summary=f"Run #{last.pk}: " + "; ".join(str(v.get("text")) for v in against),
        host_id=disk.host_id, disk_id=disk.pk, profile_id=last.profile_id, profile_name=profile_name,
        run_ids=[last.pk],
    ))  # fmt: skip


def below_promise(disk: Disk, profile_name: str, *, unresolved: Collection[str] | None = None) -> None:
    """Holds while the last N results of the workload all measured below the promised IOPS less the
    compliance tolerance; clears with a result that meets it."""
    wanted = AlertRule.of(disk.team_id, Kind.BELOW_PROMISE).consecutive_runs
    threshold = 1 - DEFAULT_TOLERANCE / 100
    rows = list(
        RunResult.objects.filter(disk=disk, profile_name=profile_name)
        .order_by("-finished_at", "-run_id")
        .values_list("run_id", "total_iops", "limit_iops", "profile_id")[:wanted]
    )
    if not rows:
        return
    judged = [(run_id, iops, limit) for run_id, iops, limit, _ in rows if limit and iops is not None]
    condition = _series(Kind.BELOW_PROMISE, disk, profile_name)
    latest = rows[0]
    if latest[2] and latest[1] is not None and latest[1] >= latest[2] * threshold:
        clear(disk.team_id, condition, f"run #{latest[0]} measured {latest[1]:,.0f} IOPS, within the promise",
              unresolved=unresolved)  # fmt: skip
        return
    if len(judged) < wanted or any(iops >= limit * threshold for _, iops, limit in judged):
        return
    worst = min(iops / limit for _, iops, limit in judged)
    raise_alert(Found(
        team_id=disk.team_id, kind=Kind.BELOW_PROMISE, condition=condition,
        title=f"Below the promise: {_workload(profile_name)} on {disk}",
        summary=(
            f"The last {wanted} runs measured below {threshold:.0%} of the promised {judged[0][2]:,.0f} IOPS "
            f"(the latest {judged[0][1]:,.0f} IOPS; the worst {worst:.0%} of the promise)."
        ),
        host_id=disk.host_id, disk_id=disk.pk, profile_id=latest[3], profile_name=profile_name,
        run_ids=[run_id for run_id, _, _ in judged],
    ))  # fmt: skip


def regression(disk: Disk, profile_name: str, *, unresolved: Collection[str] | None = None) -> None:
    """Holds while the latest change point of any metric of the workload is toward worse and not marked
    expected; clears when a later change brings it back, it is marked expected, or it is no longer found."""
    latest: dict[str, ChangePoint] = {}
    for change in ChangePoint.objects.filter(disk=disk, profile_name=profile_name).order_by("metric", "-at_ms"):
        latest.setdefault(change.metric, change)
    worse = [c for c in latest.values() if c.direction == ChangePoint.Direction.WORSE and not c.expected]
    worse.sort(key=lambda c: ChangePoint.Metric.values.index(c.metric))  # IOPS, bandwidth, latency
    condition = _series(Kind.REGRESSION, disk, profile_name)
    if not worse:
        why = (
            "marked expected" if any(c.expected for c in latest.values())
            else "a later change brought it back" if latest
            else "the change is no longer found in the results"
        )  # fmt: skip
        clear(disk.team_id, condition, why, unresolved=unresolved)
        return
    worst = max(worse, key=lambda c: abs(c.change_percent))
    raise_alert(Found(
        team_id=disk.team_id, kind=Kind.REGRESSION, condition=condition,
        title=f"Regression: {_workload(profile_name)} on {disk}",
        summary="; ".join(_change_text(c) for c in worse) + ".",
        host_id=disk.host_id, disk_id=disk.pk, profile_id=worst.profile_id, profile_name=profile_name,
        change_point_id=worst.pk, run_ids=[c.run_id for c in worse],
    ))  # fmt: skip


def _change_text(change: ChangePoint) -> str:
    """e.g. 'Total IOPS -30 % (4,000 -> 2,800 IOPS) from run #12 at 2026-11-20 02:30:00 UTC, p < 0.001'."""
    return (
        f"{change.get_metric_display()} {change.change_percent:+.0f} % ({change.levels()}) "
        f"from run #{change.run_id} at {clock.utc_text(change.at)}, {change.significance}"
    )


def _group_condition(kind: str, group: RunSet) -> str:
    """One condition per series (a profile on a set of disks, in any order): 'group_spread:disks=3,5,9:profile=x',
    the disks as a digest when there are many."""
    disks = ",".join(map(str, sorted(group_history.disks_of(group))))
    if len(disks) > 40:
        disks = "sha256-" + hashlib.sha256(disks.encode()).hexdigest()[:16]
    return f"{kind}:disks={disks}:profile={group.profile_name}"


def _group_found(kind: str, group: RunSet, title: str, summary: str) -> Found:
    members = list(group.members.order_by("set_index").values_list("pk", flat=True))
    return Found(
        team_id=group.team_id, kind=kind, condition=_group_condition(kind, group),
        title=f"{title}: {_workload(group.profile_name)} on {len(members)} disks", summary=summary,
        host_id=group.disk.host_id, disk_id=group.disk_id, profile_id=group.profile_id,
        profile_name=group.profile_name, run_set_id=group.pk, run_ids=members,
    )  # fmt: skip


def group_below_promise(group: RunSet) -> None:
    """Holds while the series' latest group gave, while every member ran, under the rule's share of its limit;
    clears with a group that reaches it. A group without the total or the limit is not judged."""
    wanted = AlertRule.of(group.team_id, Kind.GROUP_BELOW_PROMISE).promise_percent
    total = ((group.result or {}).get("totals") or {}).get("all_running") or {}
    limit = group_history.limit_of(group)
    iops, promised = total.get("iops"), limit.get("iops")
    if iops is None or not promised:
        return
    share = group_history.share_text(iops, promised)
    condition = _group_condition(Kind.GROUP_BELOW_PROMISE, group)
    if iops >= promised * wanted / 100:
        clear(group.team_id, condition, f"group {group.pk} gave {iops:,.0f} IOPS, {share} of its limit")
        return
    seconds = (total.get("window") or {}).get("seconds") or 0.0
    raise_alert(_group_found(
        Kind.GROUP_BELOW_PROMISE, group, "Group total below the promise",
        f"Group {group.pk} gave {iops:,.0f} IOPS while every member ran ({seconds:.1f} s): {share} of its limit of "
        f"{promised:,.0f} IOPS ({limit['text']}), under the {wanted} % the rule asks for.",
    ))  # fmt: skip


def group_spread(group: RunSet) -> None:
    """Holds while the series' latest group's members were more than the rule's share apart in IOPS; clears with a
    group within it. A group without a spread (a member without IOPS) is not judged."""
    allowed = AlertRule.of(group.team_id, Kind.GROUP_SPREAD).spread_percent
    compared = (group.result or {}).get("comparison") or {}
    spread = compared.get("spread_percent")
    if spread is None:
        return
    condition = _group_condition(Kind.GROUP_SPREAD, group)
    if spread <= allowed:
        clear(group.team_id, condition, f"group {group.pk}'s members were {spread:.1f} % apart")
        return
    slowest: dict[str, Any] = next(
        (m for m in (group.result or {}).get("members", []) if m.get("name") == compared.get("slowest")), {}
    )
    where = f" (disk {slowest['disk']} on host {slowest['host']})" if slowest else ""
    raise_alert(_group_found(
        Kind.GROUP_SPREAD, group, "Group members far apart",
        f"Group {group.pk}'s members' IOPS were {spread:.1f} % apart ((highest - lowest) / highest), above the "
        f"{allowed} % the rule allows; the slowest was {compared.get('slowest')}{where}.",
    ))  # fmt: skip


def schedule_skipped(schedule: Schedule, *, unresolved: Collection[str] | None = None) -> None:
    """Holds while the schedule's latest fire that left its pending state was skipped; clears when a later fire
    starts."""
    fires = Run.objects.filter(schedule=schedule, trigger=Run.Trigger.SCHEDULE).exclude(state=Run.State.PENDING)
    latest = fires.aggregate(last=Max("fire_time"))["last"]
    if latest is None:
        return
    runs = list(fires.filter(fire_time=latest).only("pk", "state", "explanation", "disk_id"))
    skipped = [run for run in runs if run.state == Run.State.SKIPPED]
    condition = _skipped_condition(schedule.pk)
    if not skipped:
        if any(run.state != Run.State.CANCELLED for run in runs):
            clear(schedule.team_id, condition, f"the fire at {clock.utc_text(latest)} started", unresolved=unresolved)
        return
    raise_alert(Found(
        team_id=schedule.team_id, kind=Kind.SCHEDULE_SKIPPED, condition=condition,
        title=f"Scheduled fire skipped: {schedule.name}",
        summary=f"{len(skipped)} run(s) of the fire at {clock.utc_text(latest)} were {skipped[0].explanation}",
        schedule_id=schedule.pk, disk_id=skipped[0].disk_id if len(skipped) == 1 else None,
        run_ids=[run.pk for run in skipped],
    ))  # fmt: skip


def stale(disk: Disk, now: datetime | None = None) -> None:
    """Holds while the disk has an enabled schedule whose N-th fire since the disk's last successful run (or
    since the schedule was made) is more than STALE_SLACK ago, and no run is under way on it."""
    now = now or timezone.now()
    condition = _stale_condition(disk.pk)
    schedules = list(Schedule.objects.filter(targets=disk, enabled=True))
    success = Run.objects.filter(disk=disk, state=Run.State.SUCCEEDED).aggregate(last=Max("finished_at"))["last"]
    overdue = _overdue(schedules, success, AlertRule.of(disk.team_id, Kind.STALE).intervals, now)
    if overdue is None:
        reason = f"a run succeeded at {clock.utc_text(success)}" if success else "nothing is overdue"
        clear(disk.team_id, condition, reason if schedules else "no enabled schedule runs on it any more")
        return
    if Run.objects.filter(disk=disk, state__in=Run.ACTIVE_STATES).exists():
        return
    schedule, due = overdue
    since = f"since {clock.utc_text(success)}" if success else "yet"
    raise_alert(Found(
        team_id=disk.team_id, kind=Kind.STALE, condition=condition, title=f"No recent successful run: {disk}",
        summary=(
            f"{disk} has had no successful run {since}, though its schedule {schedule.name} should have run it "
            f"by {clock.utc_text(due)}. Look at its latest runs and at the workers."
        ),
        host_id=disk.host_id, disk_id=disk.pk, schedule_id=schedule.pk,
    ))  # fmt: skip


def _stale_condition(disk_id: int) -> str:
    return f"stale:disk={disk_id}"


def _skipped_condition(schedule_id: int) -> str:
    return f"schedule_skipped:schedule={schedule_id}"


def _overdue(
    schedules: list[Schedule], success: datetime | None, intervals: int, now: datetime
) -> tuple[Schedule, datetime] | None:
    """The schedule and the moment by which it should have brought a successful run, if that has passed."""
    for schedule in schedules:
        since = max(success or schedule.created_at, schedule.created_at)
        fires = scheduling.next_fires(schedule.rule(), since, intervals)
        if len(fires) == intervals and fires[-1] + STALE_SLACK < now:
            return schedule, fires[-1] + STALE_SLACK
    return None


def host_key_check(alert: Alert, now: datetime) -> None:
    """Holds while the host presents another key than the approved one: the sweep reads the key it presents (a
    key scan, nothing is sent) and clears the alert when it is the approved one again. A host that does not
    answer keeps its alert: nothing says which key it would present."""
    host = alert.host
    if host is None:
        clear(alert.team_id, alert.condition, "its host was removed", now)
        return
    if not host.has_pinned_key or not host.enabled:
        return
    try:
        presented = ssh.scan_host_key(
            host.address, host.port, timeout=HOST_KEY_SCAN_TIMEOUT_S, key_type=host.host_key_type
        )
    except ssh.SSHError:
        return
    if presented.key_type == host.host_key_type and presented.key_b64 == host.host_key_b64:
        host_key_presented(host, "the alerts sweep's key check")


# ----------------------------------------------------------------------------- the minute's sweep


def sweep(now: datetime | None = None) -> str:
    """Stale disks, every unresolved alert judged again, and the recent failures and skipped fires."""
    now = now or timezone.now()
    scheduled = Disk.objects.filter(schedules__enabled=True).distinct().select_related("host")
    for disk in scheduled:
        never_raise(stale, disk, now)
    unresolved = Alert.objects.filter(state__in=Alert.UNRESOLVED).select_related(
        "host", "disk__host", "schedule", "run_set"
    )
    for alert in unresolved:
        never_raise(_judge_again, alert, now)
    recent = Run.objects.filter(finished_at__gte=now - LOOKBACK)
    failed = recent.filter(state__in=FAILED).exclude(trigger=Run.Trigger.IMPORT)
    series_failed(failed.values_list("disk_id", "profile_name").distinct().order_by())
    skipped = recent.filter(state=Run.State.SKIPPED, schedule__isnull=False)
    fires_skipped(skipped.values_list("schedule_id", flat=True).distinct().order_by())
    return f"judged {len(scheduled)} scheduled disks and {len(unresolved)} unresolved alerts"


def _judge_again(alert: Alert, now: datetime) -> None:
    if alert.kind in (Kind.GROUP_BELOW_PROMISE, Kind.GROUP_SPREAD):
        _judge_group_again(alert, now)
        return
    if alert.kind == Kind.HOST_KEY_CHANGED:
        host_key_check(alert, now)
        return
    if alert.kind == Kind.SCHEDULE_SKIPPED:
        if alert.schedule is None:
            clear(alert.team_id, alert.condition, "its schedule was deleted", now)
        else:
            schedule_skipped(alert.schedule)
        return
    if alert.disk is None:
        clear(alert.team_id, alert.condition, "its disk was removed", now)
        return
    if alert.kind == Kind.STALE:
        stale(alert.disk, now)
        return
    judge = {Kind.RUN_FAILED: run_failed, Kind.BELOW_PROMISE: below_promise, Kind.REGRESSION: regression}
    judge[Kind(alert.kind)](alert.disk, alert.profile_name)


def _judge_group_again(alert: Alert, now: datetime) -> None:
    """A group's alert is judged again on the latest group of its series that succeeded."""
    if alert.run_set is None:
        clear(alert.team_id, alert.condition, "its group was deleted", now)
        return
    ids = group_history.series_ids(alert.run_set)
    succeeded = RunSet.objects.filter(pk__in=ids, state=RunSet.State.SUCCEEDED).select_related("disk")
    latest = succeeded.order_by("-finished_at", "-pk").first()
    if latest is not None:
        judge = group_below_promise if alert.kind == Kind.GROUP_BELOW_PROMISE else group_spread
        judge(latest)
