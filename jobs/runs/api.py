"""The API's runs: list (filtered, paged), detail, samples, series, request and cancel."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from jobs import links
from jobs.analysis import verdicts
from jobs.analysis.steady import NOT_CHECKED, NOT_STEADY, STEADY
from jobs.api import idempotency
from jobs.api.base import MAX_ID, TeamScoped, TeamViewSet
from jobs.api.pagination import NewestFirst, Pagination
from jobs.models import Disk, HostSample, Profile, Run, RunSample, RunSet
from jobs.results import burst, series, stability
from jobs.results.burst_serializers import RunBurstSerializer
from jobs.results.compliance_serializers import RunStabilitySerializer
from jobs.runs import queueing, stopping
from jobs.sets import group_result


class SteadyStateSerializer(serializers.Serializer):
    """A run's steady-state stamp (jobs/analysis/steady.py): fio's verdict when the profile set ss, else
    benchweb's SNIA PTS check of the per-second samples. Keys a verdict does not have are left out."""

    state = serializers.ChoiceField(
        choices=["steady", "not_steady", "not_checked"],
        help_text="steady: the criterion held; not_steady: it did not (why says how); not_checked: it could not be "
        "judged (why says why).",
    )
    by = serializers.ChoiceField(choices=["fio", "benchweb"], help_text="Who judged: fio (ss) or benchweb.")
    why = serializers.CharField(required=False, help_text="not_steady and not_checked: the reason, in words.")
    at_s = serializers.IntegerField(
        required=False, allow_null=True, help_text="fio, steady: seconds into the job (ramp included) when it held."
    )
    metric = serializers.CharField(required=False, help_text="fio: the criterion, iops, iops_slope, bw or bw_slope.")
    limit = serializers.CharField(required=False, help_text='fio: the limit as it printed it ("0.300000%").')
    criterion = serializers.CharField(
        required=False, help_text='fio: what the last window measured, as printed ("0.000000%").'
    )
    window_s = serializers.FloatField(
        required=False, allow_null=True, help_text="The window judged, seconds (fio: ss_dur; benchweb: last half)."
    )
    rule = serializers.CharField(required=False, help_text="benchweb: the rule applied, in words.")
    rounds = serializers.IntegerField(required=False, help_text="benchweb: how many rounds the window is cut into.")
    average_iops = serializers.FloatField(required=False, help_text="benchweb: the rounds' average total IOPS.")
    range_percent = serializers.FloatField(
        required=False, help_text="benchweb: the rounds' max - min, % of their average (steady: at most 20)."
    )
    slope_percent = serializers.FloatField(
        required=False, help_text="benchweb: the fitted line's change across the window, % of the average (at most 10)."
    )


def _percent(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(required=False, help_text=help_text)


class TelemetryBusiestSerializer(serializers.Serializer):
    cpu = serializers.IntegerField(help_text="The busiest CPU's number (cpuN in /proc/stat).")
    busy = _percent("Its busy share of the second, % (all but idle and iowait).")


class TelemetryCpuSerializer(serializers.Serializer):
    user = _percent("User time (with nice), % of all CPUs.")
    system = _percent("System time (with irq and softirq), % of all CPUs.")
    iowait = _percent("I/O wait, % of all CPUs.")
    steal = _percent("Stolen by the hypervisor, % of all CPUs.")
    idle = _percent("Idle, % of all CPUs.")
    busiest = TelemetryBusiestSerializer(required=False)


class TelemetryMemorySerializer(serializers.Serializer):
    total_bytes = serializers.IntegerField(required=False)
    available_bytes = serializers.IntegerField(required=False)
    cached_bytes = serializers.IntegerField(required=False, help_text="The page cache (Cached in /proc/meminfo).")
    dirty_bytes = serializers.IntegerField(required=False)


class TelemetryPressureSerializer(serializers.Serializer):
    io_some = _percent("Share of the second some task stalled on I/O (PSI), %.")
    io_full = _percent("Share of the second every non-idle task stalled on I/O, %.")
    cpu_some = _percent("Share stalled waiting for a CPU, %.")
    memory_some = _percent("Share some task stalled on memory, %.")
    memory_full = _percent("Share every non-idle task stalled on memory, %.")


class TelemetryDeviceSerializer(serializers.Serializer):
    read_iops = serializers.FloatField(required=False)
    write_iops = serializers.FloatField(required=False)
    read_mb_s = serializers.FloatField(required=False, help_text="MB/s, 10⁶ bytes a second.")
    write_mb_s = serializers.FloatField(required=False)
    queue = serializers.FloatField(required=False, help_text="Average queue size (iostat's aqu-sz).")
    await_ms = serializers.FloatField(required=False, allow_null=True, help_text="Average I/O time, ms; null: none.")
    util = _percent("Time with I/O in flight, % of the second (iostat's %util).")


class TelemetrySecondSerializer(serializers.Serializer):
    t = serializers.FloatField(help_text="When the second ended, epoch seconds on the worker's clock.")
    t_s = serializers.FloatField(help_text="Seconds since the run's start, as its IOPS samples count them.")
    cpu = TelemetryCpuSerializer(required=False)
    memory = TelemetryMemorySerializer(required=False)
    load1 = serializers.FloatField(required=False, help_text="The 1-minute load average.")
    pressure = TelemetryPressureSerializer(required=False, help_text="Absent where the kernel has no PSI.")
    devices = serializers.DictField(
        child=TelemetryDeviceSerializer(), required=False, help_text="The run's devices by kernel name."
    )


class VerdictSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[kind for kind, _ in verdicts.verdict_names()])
    text = serializers.CharField(help_text='The verdict with its evidence: "client-bound: CPU 3 was 99 % busy …".')
    evidence = serializers.DictField(help_text="The numbers the sentence was made from.")


VERDICTS_HELP = (
    "Whether the number is the disk's, judged from the host's telemetry and fio's own view when the run was stored "
    "(docs/user-guide/verdicts.md): each verdict against it; empty: it measured the disk; null: not judged (not a "
    "succeeded fio run, or stored before benchweb judged runs)."
)


class RunTelemetrySerializer(serializers.Serializer):
    seconds = TelemetrySecondSerializer(many=True, help_text="The host, second by second, during the run.")
    verdicts = VerdictSerializer(many=True, allow_null=True, help_text=VERDICTS_HELP)


class RunSerializer(serializers.ModelSerializer):
    host = serializers.IntegerField(source="disk.host_id", read_only=True)
    created_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    final = serializers.BooleanField(source="is_final", read_only=True)
    steady_state = serializers.SerializerMethodField(
        help_text="Was the run measured in steady state? null for runs without a result and for those stored "
        "before benchweb stamped it (read as not checked). The list filters on it with ?steady=."
    )

    class Meta:
        model = Run
        fields = [
            "id", "uuid", "disk", "host", "profile", "profile_name", "schedule", "fire_time", "trigger", "state",
            "final", "explanation", "created_by", "created_at", "not_before", "queued_at", "started_at",
            "finished_at", "progress", "destructive", "warnings", "steady_state",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(SteadyStateSerializer(allow_null=True))
    def get_steady_state(self, run: Run) -> dict[str, Any] | None:
        return run.steady_state


# The runs list reads these columns as plain values (no model instances, no joined rows) and builds each
# item with run_list_item: a page of 50 then costs ~1/8 of what RunSerializer's field machinery did, which
# was most of a list request's CPU time (bench/api_runs_list.py). RunSerializer stays the list's schema; a
# test holds the two to the same output.
RUN_LIST_COLUMNS = {
    "id": "id", "uuid": "uuid", "disk": "disk_id", "host": "disk__host_id", "profile": "profile_id",
    "profile_name": "profile_name", "schedule": "schedule_id", "fire_time": "fire_time", "trigger": "trigger",
    "state": "state", "explanation": "explanation", "created_by": "created_by__username",
    "created_at": "created_at", "not_before": "not_before", "queued_at": "queued_at", "started_at": "started_at",
    "finished_at": "finished_at", "progress": "progress", "destructive": "destructive", "warnings": "warnings",
    "steady_state": "steady_state",
}  # fmt: skip


_RUN_LIST_TIMES = ("fire_time", "created_at", "not_before", "queued_at", "started_at", "finished_at")


def run_list_item(row: dict[str, Any]) -> dict[str, Any]:
    """One row of RUN_LIST_COLUMNS values as RunSerializer renders it (field order, ISO times, 'Z' for UTC)."""
    zone = timezone.get_current_timezone()
    item: dict[str, Any] = {}
    for name in RunSerializer.Meta.fields:
        if name == "final":
            item[name] = row["state"] in Run.FINAL_STATES
            continue
        value = row[RUN_LIST_COLUMNS[name]]
        if name == "uuid":
            value = str(value)
        elif name in _RUN_LIST_TIMES and value is not None:
            value = value.astimezone(zone).isoformat()
            value = value[:-6] + "Z" if value.endswith("+00:00") else value
        item[name] = value
    return item


class FioCpuSerializer(serializers.Serializer):
    """fio's `cpu` line of the result (docs/reference/fio-output.md#cpu-and-disk-util)."""

    usr_percent = serializers.FloatField(
        allow_null=True,
        help_text="User CPU as a percentage of one CPU (fio's usr_cpu), averaged over a group's jobs; null when "
        "the result is several job entries whose clocks fio did not print.",
    )
    sys_percent = serializers.FloatField(allow_null=True, help_text="System CPU, likewise (fio's sys_cpu).")
    ctx = serializers.IntegerField(allow_null=True, help_text="Context switches, summed over the jobs.")
    majf = serializers.IntegerField(allow_null=True, help_text="Major page faults; null where fio 1.x left it out.")
    minf = serializers.IntegerField(allow_null=True, help_text="Minor page faults; null where fio 1.x left it out.")
    job_runtime_ms = serializers.IntegerField(
        allow_null=True,
        help_text="The clock fio divided the CPU times by (its job_runtime, fio 3.8+ JSON, summed over a group's "
        "jobs); null where fio did not print it.",
    )


class FioDiskUtilSerializer(serializers.Serializer):
    """One of fio's disk util lines. A count fio did not print (sectors before 3.36, an aggregate for a device
    that is not md or device-mapper) is absent."""

    name = serializers.CharField(help_text="The kernel's name of the device ('vda', 'md0', 'dm-3').")
    host = serializers.CharField(required=False, help_text="fio --client output: the client the device is on.")
    read_ios = serializers.IntegerField(
        required=False, help_text="I/Os the device completed, as counted by the kernel."
    )
    write_ios = serializers.IntegerField(required=False)
    read_sectors = serializers.IntegerField(required=False, help_text="fio 3.36 and later.")
    write_sectors = serializers.IntegerField(required=False)
    read_merges = serializers.IntegerField(required=False)
    write_merges = serializers.IntegerField(required=False)
    read_ticks = serializers.IntegerField(required=False, help_text="ms the device spent on reads.")
    write_ticks = serializers.IntegerField(required=False)
    in_queue = serializers.IntegerField(required=False, help_text="ms of I/O time weighted by the queue.")
    util_percent = serializers.FloatField(required=False, help_text="Share of the run the device was busy.")
    aggr_read_ios = serializers.IntegerField(required=False, help_text="md / device-mapper: per member, averaged.")
    aggr_write_ios = serializers.IntegerField(required=False)
    aggr_read_merges = serializers.IntegerField(required=False)
    aggr_write_merges = serializers.IntegerField(required=False)
    aggr_read_ticks = serializers.IntegerField(required=False)
    aggr_write_ticks = serializers.IntegerField(required=False)
    aggr_in_queue = serializers.IntegerField(required=False)
    aggr_util_percent = serializers.FloatField(required=False, help_text="The busiest member's util.")


class RunResultSerializer(serializers.Serializer):
    """A finished run's result as shown first: the tool's own figures and the workload its output states."""

    # The serializer metaclass moves declared fields out of the class, so these do not shadow Field.label etc.
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="Which part of the output this run is ('group 1 (randwrite)', 'client 10.0.0.5', 'All clients'); "
        "empty for an output with one result."
    )
    partial = serializers.CharField(  # type: ignore[assignment]
        help_text="Non-empty when the output was an excerpt (a lone summary line): what it does not say."
    )
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="Imports: the file name, or 'pasted text'; empty for runs benchweb ran."
    )
    printed = serializers.DictField(
        allow_null=True,
        help_text="The tool's figures as it printed them, strings with their unit, per direction: "
        '{"read": {"iops": "1506", "bw": "5.88MiB/s", "bw_alt": "6169kB/s", "runtime": "60001msec"}, "write": '
        '..., "total": ..., "cpu": {"usr": "4.83%", "sys": "33.10%", "ctx": "72885", "majf": "0", "minf": "11"}, '
        '"disk_util": [{"name": "vda", "util": "69.69%", "ios": "49546/21160"}]}; a direction not printed is '
        "null. null for runs stored before benchweb kept them: summary holds their numbers.",
    )
    workload = serializers.DictField(
        allow_null=True,
        help_text="What the output says the job was: rw, block_size (as printed), iodepth, numjobs, read_percent, "
        "ioengine; each null when the output does not say. null for runs stored before benchweb kept it.",
    )
    cpu = FioCpuSerializer(
        allow_null=True,
        help_text="fio's own cpu line (summary.cpu); null when the output has none or the run was stored before "
        "benchweb kept it.",
    )
    cpu_us_per_io = serializers.FloatField(
        allow_null=True,
        help_text="µs of fio's CPU (user + system) per completed I/O: (usr_percent + sys_percent) / 100 × fio's "
        "clock (job_runtime_ms, else runtime × jobs) / I/Os. null when an input is missing.",
    )
    disk_util = FioDiskUtilSerializer(
        many=True, help_text="fio's disk util lines (summary.disk_util); empty when fio printed none."
    )


class EnvironmentChainNodeSerializer(serializers.Serializer):
    """One device of the chain, as sysfs names it."""

    name = serializers.CharField(help_text="Kernel name (sdb, nvme0n1p1, dm-3, md0, loop2).")
    kind = serializers.ChoiceField(choices=["disk", "partition", "dm", "md", "loop"])
    # The serializer metaclass moves declared fields out of the class, so these do not shadow Field.parent or .label.
    parent = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text="The device it was reached from: a member's dm or md device, a partition's disk."
    )
    dm_name = serializers.CharField(required=False)
    dm_subsystem = serializers.CharField(required=False, help_text="What the dm uuid starts with: LVM, CRYPT, mpath…")
    md_level = serializers.CharField(required=False, help_text="/sys/block/<md>/md/level: raid0, raid1, linear…")


class EnvironmentChainSerializer(serializers.Serializer):
    """The devices under the target's device: its partition's whole disk, and what a dm or md device is made of."""

    top = serializers.CharField(help_text="Kernel name of the target's device.")
    label = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text='An LVM volume as "vg0/lv", or another dm device\'s name.'
    )
    nodes = EnvironmentChainNodeSerializer(many=True, help_text="The top first; each device once.")
    members = serializers.ListField(
        child=serializers.CharField(),
        help_text="The devices at the bottom of a dm/md stack (a partition stays the partition); empty for a plain "
        "disk, partition or loop device.",
    )
    text = serializers.CharField(help_text='"vg0/lv → dm-3 → vdb…vdi": one level per arrow.')
    truncated = serializers.CharField(required=False, help_text="Why the probe stopped reading the chain.")


class EnvironmentDeviceSerializer(serializers.Serializer):
    """The target's block device (under a directory: the filesystem's source), from sysfs."""

    name = serializers.CharField(required=False, help_text="Kernel name of the device the target resolves to.")
    queue_name = serializers.CharField(required=False, help_text="Whose queue it uses: a partition's parent.")
    partition_of = serializers.CharField(required=False)
    dm_name = serializers.CharField(required=False, help_text="A device-mapper device's name.")
    model = serializers.CharField(required=False)
    size_bytes = serializers.IntegerField(required=False)
    scheduler = serializers.CharField(required=False, help_text="The I/O scheduler selected ([brackets] in sysfs).")
    nr_requests = serializers.IntegerField(required=False)
    rq_affinity = serializers.IntegerField(required=False, help_text="As read before the launch.")
    rq_affinity_set = serializers.IntegerField(
        required=False, help_text="What benchweb set it to before fio started (a pinned profile on a tunable host)."
    )
    rq_affinity_writable = serializers.BooleanField(required=False, help_text="Whether the login user may write it.")
    read_ahead_kb = serializers.IntegerField(required=False)
    rotational = serializers.IntegerField(required=False)
    queues = serializers.IntegerField(required=False, help_text="Number of blk-mq queues.")
    queue_cpus = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Each blk-mq queue's cpu_list, in queue order."
    )
    chain = EnvironmentChainSerializer(required=False)


class EnvironmentFilesystemSerializer(serializers.Serializer):
    """The filesystem a directory target is on (findmnt -T); only `raw` when findmnt's line was not four fields."""

    type = serializers.CharField(required=False)
    # The serializer metaclass moves declared fields out of the class, so this does not shadow Field.source.
    source = serializers.CharField(required=False)  # type: ignore[assignment]
    mount = serializers.CharField(required=False)
    options = serializers.CharField(required=False, help_text="Mount options.")
    raw = serializers.CharField(required=False)


class EnvironmentSerializer(serializers.Serializer):
    """Run.environment, as jobs/environment/probe.py reads the probe's report."""

    kernel = serializers.CharField(required=False, help_text="uname -r")
    kernel_build = serializers.CharField(required=False, help_text="uname -v")
    os = serializers.CharField(required=False, help_text="PRETTY_NAME of /etc/os-release")
    fio = serializers.CharField(required=False, help_text="fio --version")
    cpus = serializers.IntegerField(required=False, help_text="nproc: the CPUs online for the login user")
    cpus_online = serializers.CharField(required=False, help_text="/sys/devices/system/cpu/online")
    cpu_model = serializers.CharField(required=False)
    mem_total_kb = serializers.IntegerField(required=False, help_text="MemTotal of /proc/meminfo")
    target = serializers.CharField(required=False, help_text="The target path as the host resolved it.")
    filesystem = EnvironmentFilesystemSerializer(required=False)
    device = EnvironmentDeviceSerializer(required=False)
    queue_unreadable = serializers.CharField(required=False, help_text="Why the device's queues were not read.")
    instance_type = serializers.CharField(required=False, help_text="Only for a host whose cloud_metadata is on.")
    complete = serializers.BooleanField(help_text="Whether the probe's report was whole (header and end seen).")


@extend_schema_field(EnvironmentSerializer(allow_null=True))
class EnvironmentField(serializers.JSONField):
    """Run.environment as stored; the schema above documents its keys."""


class RunSetMembershipSerializer(serializers.Serializer):
    """The set a run is a member of (a sweep's point)."""

    id = serializers.IntegerField(help_text="The set's id: GET /api/v1/sets/{id}/.")
    kind = serializers.ChoiceField(choices=RunSet.Kind.choices)
    index = serializers.IntegerField(help_text="The run's place in the set, from 0.")
    point = serializers.DictField(
        child=serializers.IntegerField(), help_text="The fields this point sets on the set's base profile."
    )
    url = serializers.CharField(help_text="The set in the API.")


class ClockOffsetSerializer(serializers.Serializer):
    """A group member's host clock against the worker's (docs/user-guide/groups.md, "Starting together"): measured
    over the host's SSH session at the member's launch, or why it was not. Each figure is null when not measured."""

    offset_s = serializers.FloatField(
        allow_null=True, help_text="The host's clock minus the worker's, seconds: positive when the host is ahead."
    )
    uncertainty_s = serializers.FloatField(
        allow_null=True, help_text="The true offset lies within offset_s ± this, seconds: half the round trip."
    )
    delay_s = serializers.FloatField(allow_null=True, help_text="The believed probe's round trip, seconds.")
    probes = serializers.IntegerField(allow_null=True, help_text="How many probes were sent (the shortest believed).")
    why = serializers.CharField(allow_null=True, help_text="Why the offset was not measured (yet); null when it was.")


# A group member's offset is probed when it is launched; before then it is not known yet.
NOT_LAUNCHED = (Run.State.PENDING, Run.State.QUEUED, Run.State.LAUNCHING)


def clock_offset(run: Run) -> dict[str, Any] | None:
    """A run's clock offset as the API gives it: null outside a group (or a group-size sweep), else its measured
    figures or why there are none (not launched yet, a probe that failed, or never measured)."""
    if run.run_set is None or run.run_set.kind not in RunSet.TOGETHER_KINDS:
        return None
    stored = run.clock_offset if isinstance(run.clock_offset, dict) else {}
    found = group_result.measured_offset(stored)
    if found is not None:
        probes = stored.get("probes")
        probes = probes if isinstance(probes, int) and not isinstance(probes, bool) else None
        return {"offset_s": found.offset_s, "uncertainty_s": found.uncertainty_s, "delay_s": found.delay_s,
                "probes": probes, "why": None}  # fmt: skip
    if stored.get("why"):
        why = str(stored["why"])
    elif run.state in NOT_LAUNCHED:
        why = "not measured yet: a member's host clock is probed when the member is launched"
    else:
        why = "offset not measured"
    return {"offset_s": None, "uncertainty_s": None, "delay_s": None, "probes": None, "why": why}


class RunDetailSerializer(RunSerializer):
    progress = serializers.JSONField(
        source="live_progress",
        read_only=True,
        help_text="Running: the last poll's read_iops / write_iops (fio's latest interval, which ended iops_at_s "
        "into its runtime), elapsed_s and eta_s as of now. Finished: elapsed_s is the real runtime, from the host's "
        "clock (elapsed_from 'host') or until benchweb saw the finish ('collector'). While a profile's fill runs "
        "before the measured job: phase 'precondition' and precondition_bytes written so far.",
    )
    result = serializers.SerializerMethodField(help_text="null until the run has a result.")
    burst = serializers.SerializerMethodField(
        help_text="Burst credits, predicted from the disk's runs: the balance at the run's start, whether burst "
        "served it and the limit it is judged against, the knee of its series. null when the disk has no credit "
        "bucket or the run has not started."
    )
    environment = EnvironmentField(
        read_only=True,
        help_text="What the read-only probe found on the host before the launch; null: not probed (imports, runs "
        "from before benchweb recorded it). A fact the host did not report is absent.",
    )
    run_set = serializers.SerializerMethodField(
        help_text="The set of runs this run is a point of (a sweep); null for a run on its own."
    )
    stability = serializers.SerializerMethodField(
        help_text="How steady the run was inside itself (CV of per-second IOPS, p99/p50, seconds below 80 % of its "
        "median); null for a run without a result."
    )
    clock_offset = serializers.SerializerMethodField(
        help_text="A group member's host clock against the worker's, measured at its launch (offset_s, "
        "uncertainty_s, delay_s, probes), or why it was not (why); null for a run outside a group."
    )
    verdicts = VerdictSerializer(many=True, allow_null=True, read_only=True, help_text=VERDICTS_HELP)

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields, "parameters", "summary", "result", "limits_snapshot",
            "command", "exit_status", "cancel_requested", "burst", "environment", "stability", "run_set",
            "clock_offset", "verdicts",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(RunResultSerializer(allow_null=True))
    def get_result(self, run: Run) -> dict[str, Any] | None:
        if not run.summary:
            return None
        parameters = run.parameters or {}
        return {
            "label": parameters.get("label", ""),
            "partial": parameters.get("partial", ""),
            "source": parameters.get("source", "") if run.trigger == Run.Trigger.IMPORT else "",
            "printed": run.summary.get("printed"),
            "workload": run.summary.get("workload"),
            "cpu": run.summary.get("cpu"),
            "cpu_us_per_io": run.summary.get("cpu_us_per_io"),
            "disk_util": run.summary.get("disk_util") or [],
        }

    @extend_schema_field(RunSetMembershipSerializer(allow_null=True))
    def get_run_set(self, run: Run) -> dict[str, Any] | None:
        if run.run_set is None:
            return None
        url = links.absolute(reverse("api-set-detail", kwargs={"pk": run.run_set_id}), self.context.get("request"))
        return {"id": run.run_set_id, "kind": run.run_set.kind, "index": run.set_index, "point": run.set_point or {},
                "url": url}  # fmt: skip

    @extend_schema_field(ClockOffsetSerializer(allow_null=True))
    def get_clock_offset(self, run: Run) -> dict[str, Any] | None:
        return clock_offset(run)

    @extend_schema_field(RunBurstSerializer(allow_null=True))
    def get_burst(self, run: Run) -> dict[str, Any] | None:
        return burst.run_burst(run)

    @extend_schema_field(RunStabilitySerializer(allow_null=True))
    def get_stability(self, run: Run) -> dict[str, Any] | None:
        return stability.run_stability(run) if run.state == Run.State.SUCCEEDED else None


class RunRequestSerializer(serializers.Serializer):
    disk = TeamScoped(queryset=Disk.objects.select_related("host"))
    profile = TeamScoped(queryset=Profile.objects.all(), presets=True)


class RunSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunSample
        fields = ["t_s", "read_iops", "write_iops"]


# Runs a list request may name by id (?id=1&id=2...): one page of the largest page size.
ID_FILTER_MAX = 200


class RunFilter(serializers.Serializer):
    disk = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    host = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    profile = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    state = serializers.MultipleChoiceField(choices=Run.State.choices, required=False, help_text="Repeat for several.")
    trigger = serializers.ChoiceField(choices=Run.Trigger.choices, required=False)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    finished_after = serializers.DateTimeField(required=False)
    finished_before = serializers.DateTimeField(required=False)
    steady = serializers.ChoiceField(
        choices=[STEADY, NOT_STEADY, NOT_CHECKED],
        required=False,
        help_text="The steady-state stamp: not_checked also takes the runs without one (no result yet, or stored "
        "before benchweb stamped steady state).",
    )
    id = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=ID_FILTER_MAX,
        help_text=f"Only these runs; repeat for several (at most {ID_FILTER_MAX}): how a client follows the runs it "
        "started with one request a poll rather than one a run.",
    )

    LOOKUPS = {
        "id": "id__in",
        "disk": "disk_id",
        "host": "disk__host_id",
        "profile": "profile_id",
        "state": "state__in",
        "trigger": "trigger",
        "created_after": "created_at__gte",
        "created_before": "created_at__lt",
        "finished_after": "finished_at__gte",
        "finished_before": "finished_at__lt",
    }

    def apply(self, runs: QuerySet) -> QuerySet:
        # An absent multiple-choice parameter validates as an empty set: no filter, not "no state at all".
        given = {name: value for name, value in self.validated_data.items() if value not in (None, set(), [])}
        stamp = given.pop("steady", None)
        runs = runs.filter(**{self.LOOKUPS[name]: value for name, value in given.items()})
        return runs.filter(self.steady_lookup(stamp)) if stamp else runs

    @staticmethod
    def steady_lookup(stamp: str) -> Q:
        if stamp == NOT_CHECKED:
            return Q(steady_state__isnull=True) | Q(steady_state__state=stamp)
        return Q(steady_state__state=stamp)


@extend_schema_view(
    list=extend_schema(parameters=[RunFilter]),
    create=extend_schema(
        request=RunRequestSerializer, responses={201: RunDetailSerializer}, parameters=idempotency.PARAMETERS
    ),
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, TeamViewSet):
    """Runs: list with filters, start one now (trigger 'api'), cancel, and read the result."""

    pagination_class = NewestFirst
    list_parameters = tuple(RunFilter().fields)

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return RunSerializer if self.action == "list" else RunDetailSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Run.objects.none()
        runs = Run.objects.filter(team=self.team)
        if self.action == "list":
            filters = RunFilter(data=self.request.query_params)
            filters.is_valid(raise_exception=True)
            # Plain values, not model instances through RunSerializer: see RUN_LIST_COLUMNS.
            return filters.apply(runs).values(*RUN_LIST_COLUMNS.values())
        if self.action == "series":
            return series.RUN_FOR_SERIES.filter(team=self.team)
        return runs.select_related("disk", "created_by", "run_set")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None  # the view has a pagination_class
        # A client waiting for its runs reads their live figures here: they are read often while it asks.
        Run.want_progress_of(row["id"] for row in page if row["state"] == Run.State.RUNNING)
        return self.get_paginated_response([run_list_item(row) for row in page])

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        run = self.get_object()
        Run.want_progress([run])  # its live figures are read often while a client asks for them
        return Response(self.get_serializer(run).data)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Start a run now (trigger `api`); if its disk is busy it waits and says why. Sent again with the same
        `Idempotency-Key` and body, it starts nothing and answers the run the key started."""

        def start() -> Run:
            body = RunRequestSerializer(data=request.data, context=self.get_serializer_context())
            body.is_valid(raise_exception=True)
            data = body.validated_data
            return queueing.request_run(data["disk"], data["profile"], trigger=Run.Trigger.API, user=request.user)

        def show(run: Run) -> dict[str, Any]:
            return dict(RunDetailSerializer(run, context=self.get_serializer_context()).data)

        return idempotency.create_once(request, self.team, self.get_queryset(), start, show)

    @extend_schema(request=None, responses={200: RunDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Pending runs stop at once; running ones are stopped on the host by the next poll."""
        run = stopping.cancel(self.get_object())
        return Response(RunDetailSerializer(run, context=self.get_serializer_context()).data)

    @extend_schema(responses={200: RunSampleSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=Pagination)
    def samples(self, request: Request, pk: str) -> Response:
        """The run's per-second IOPS, in time order."""
        run = self.get_object()
        page = self.paginate_queryset(run.samples.order_by("t_s"))
        return self.get_paginated_response(RunSampleSerializer(page, many=True).data)

    @extend_schema(responses={200: RunTelemetrySerializer})
    @action(detail=True, methods=["get"])
    def telemetry(self, request: Request, pk: str) -> Response:
        """The run's host second by second while it ran (CPU, memory, load, pressure, its devices' counters), read
        by the host's observation step; and its verdicts once collected. CSV: /runs/{id}/telemetry.csv."""
        run = self.get_object()
        return Response({"seconds": HostSample.of_run(run, until=timezone.now()), "verdicts": run.verdicts})

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def series(self, request: Request, pk: str) -> Response:
        """The run chart's data: samples downsampled, the limits, latency percentiles and histogram."""
        return Response(series.run_series(self.get_object()))
