"""The worker's CPU for one collection of a finished run, without its SSH reads: the fio stand-in's output of a run
of `--runtime` seconds judged (`tool.interpret`: the parse of every status document and the outcome) and stored
(`storing.store_outcome`: the verdicts, the samples, the final state, the result and its day, and after the commit
the alert checks), the two steps jobs/runs/collecting.py takes once it has read the run's files.

    .venv/bin/python bench/collection_cost.py [--db sqlite|postgres|both] [--runtime 120] [--collections 30]
        [--disks 10] [--profile] [--database-url postgres://postgres@127.0.0.1:5432/benchweb_collection_cost]

The output is what the stand-in (bench/standin/) writes for the fleet benches' workload, rendered here from the
same recorded document and scaled the same way, one status document a second and the final one. Each collection
is of a new run of the profile on one of `--disks` disks in turn (each disk's latest run, as in a fleet), after
`--disks` untimed ones; the report gives the median thread CPU of each step and of the whole. `--profile` prints
the 30 costliest functions of benchweb and SQL over all the collections (cProfile, cumulative time).

Target (issue 34): the workers' whole budget is about 0.03 s of CPU a run-minute, and in the fleet benches a run's
collection costs the workers about as much as its launch and its watching together; so the collection's half,
<= 15 ms a run-minute (a 120 s run's collection <= 30 ms here, where the SSH reads and the clean-up come on top).
Exit status: 0 met, 1 missed, 2 the measurement failed, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchkit import (
    PG_SERVER,
    Stack,
    add_database_options,
    add_smoke_option,
    configure_django,
    interrupt_on_signals,
    measure_and_report,
    parse_args,
    say,
)

sys.path.insert(0, str(Path(__file__).resolve().parent / "standin"))
import build as standin  # bench/standin/build.py: the stand-in's recording and its pieces

TARGET_MS_PER_RUN_MINUTE = 15.0  # half of issue 34's 0.03 s of worker CPU a run-minute


def job_section(jobfile: str) -> tuple[str, list[tuple[str, str]]]:
    """The job file's last section that is not [global]: its name and its options as written, as fio, and the
    stand-in, echo them."""
    name, options = "", []
    in_global = False
    for raw in jobfile.splitlines():
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            section = line[1:].split("]")[0]
            in_global = section == "global"
            if not in_global:
                name, options = section, []
            continue
        if not in_global:
            key, _, value = line.partition("=")
            options.append((key.strip(), value.strip()))
    return name, options


def stand_in_output(jobname: str, options: list[tuple[str, str]], runtime_s: int, epoch_ms: int) -> str:
    """What the stand-in writes for a job of runtime_s seconds: a status document a second, then the final one."""
    document = standin.final_document(standin.RECORDING.read_text())
    recorded_ms, _ = standin.recorded_runtimes(document)
    pieces = standin.pieces(document)
    quoted = ",\n".join(f'        "{key}" : "{value}"' for key, value in options) + "\n"

    def render(ran_ms: int, final: bool) -> str:
        now_ms = epoch_ms + ran_ms
        values = {
            "EPOCH": str(now_ms // 1000), "EPOCH_MS": str(now_ms), "JOBNAME": jobname, "OPTIONS": quoted,
            "CTIME": time.ctime(now_ms / 1000), "ELAPSED": str((ran_ms + 999) // 1000),
            "ETA": "0" if final else "2147483647",
        }  # fmt: skip
        out = []
        for text, kind, value in pieces:
            out.append(text)
            if kind == "SCALED":
                out.append(str((value * ran_ms + recorded_ms // 2) // recorded_ms))
            elif kind != "LITERAL":
                out.append(values[kind])
        return "".join(out)

    seconds = range(1, runtime_s + 1)
    return "".join(render(1000 * s, False) for s in seconds) + render(1000 * runtime_s, True)


def _median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    configure_django(stack, args.db, args.database_url)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from jobs import runners as runner
    from jobs.models import Disk, Host, Profile, Run, Team
    from jobs.runs import storing

    team = Team.objects.create(name="collection bench")
    host = Host.objects.create(team=team, name="bench-host", address="127.0.0.1", username="bench")
    disks = [Disk.objects.create(host=host, team=team, label=f"d{n}", target_path=f"/srv/bench/d{n}",
                                 kind=Disk.Kind.DIRECTORY) for n in range(args.disks)]  # fmt: skip
    profile = Profile.objects.create(
        team=team, name=f"4k randrw {args.runtime} s", rw="randrw", read_percent=70, block_size_bytes=4096,
        iodepth=1, jobs=1, runtime_s=args.runtime, time_based=True, ioengine="psync", direct=True,
        size_bytes=16 * 2**20,
    )  # fmt: skip
    params = profile.parameters()
    tool = runner.for_parameters(params)
    _, files, _ = tool.build(params, disks[0].target_path, disks[0].kind, "/srv/bench/run", "bench")
    jobname, options = job_section(files["job.fio"].decode())
    output = stand_in_output(jobname, options, args.runtime, int(time.time() * 1000))
    outputs = {"result.json": output.encode(), "stdout": b"", "stderr": b""}
    say(f"[{args.db}] {args.runtime} s of stand-in output: {len(output):,} bytes, {output.count('fio version')} docs")

    steps: dict[str, list[float]] = {"interpret": [], "store": []}
    profiler = cProfile.Profile() if args.profile else None
    for number in range(args.disks + args.collections):
        disk = disks[number % len(disks)]
        started = timezone.now() - timezone.timedelta(seconds=args.runtime + 1)
        run = Run.objects.create(
            disk=disk, team=team, profile=profile, profile_name=profile.name, parameters=params,
            state=Run.State.COLLECTING, queued_at=started, started_at=started, heartbeat_at=timezone.now(),
            remote_dir=f"/srv/bench/runs/{uuid.uuid4()}",
        )  # fmt: skip
        timed = number >= args.disks
        if profiler and timed:
            profiler.enable()
        # Only when asked: capturing makes each statement's text, and the run's output is most of one.
        with CaptureQueriesContext(connection) if args.queries else contextlib.nullcontext() as queries:
            began = time.thread_time()
            outcome = tool.interpret(outputs, 0, params, elapsed_s=float(args.runtime), limit_s=None)
            parsed = time.thread_time()
            stored = storing.store_outcome(run, outcome, exit_status=0, progress=run.progress)
            ended = time.thread_time()
        if profiler and timed:
            profiler.disable()
        if not stored or outcome.state != Run.State.SUCCEEDED:
            raise RuntimeError(f"collection {number + 1}: {outcome.state}: {outcome.explanation}")
        if timed:
            steps["interpret"].append(parsed - began)
            steps["store"].append(ended - parsed)
    run.refresh_from_db()
    samples = run.samples.count()
    if samples < args.runtime - 2:
        raise RuntimeError(f"the last run stored {samples} samples for a {args.runtime} s run")
    if args.queries:
        for query in queries.captured_queries:
            sql = query["sql"]
            bulky = [name for name in ("raw_output", "raw_stderr", "summary") if f'"jobs_run"."{name}"' in sql]
            print(f"{query['time']:>6} s  {len(sql):>7} chars  {sql[:200]}  {' '.join(bulky)}")
    if profiler:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats(args.sort).print_stats(r"jobs/|sql|django|psycopg", 40)
    whole = [a + b for a, b in zip(steps["interpret"], steps["store"], strict=True)]
    return {
        "db": args.db, "runtime_s": args.runtime, "collections": args.collections, "output_bytes": len(output),
        "samples": samples, "queries": len(queries.captured_queries) if queries else None,
        "interpret_ms": _median_ms(steps["interpret"]), "store_ms": _median_ms(steps["store"]),
        "whole_ms": _median_ms(whole), "whole_p90_ms": 1000 * sorted(whole)[int(0.9 * (len(whole) - 1))],
    }  # fmt: skip


def report(results: list[dict[str, Any]]) -> bool:
    met = True
    for r in results:
        per_minute = r["whole_ms"] * 60 / r["runtime_s"]
        queries = "" if r["queries"] is None else f", {r['queries']} queries"
        ok = per_minute <= TARGET_MS_PER_RUN_MINUTE
        met = met and ok
        print(f"{r['db']:<9} a {r['runtime_s']} s run's collection ({r['output_bytes']:,} bytes, {r['samples']} "
              f"samples{queries}), median of {r['collections']}: interpret {r['interpret_ms']:.1f} ms "
              f"+ store {r['store_ms']:.1f} ms = {r['whole_ms']:.1f} ms of thread CPU (p90 {r['whole_p90_ms']:.1f}), "
              f"{per_minute:.1f} ms a run-minute — target <= {TARGET_MS_PER_RUN_MINUTE:.0f}: "
              f"{'PASS' if ok else 'FAIL'}")  # fmt: skip
    return met


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_database_options(parser, f"{PG_SERVER}/benchweb_collection_cost")
    parser.add_argument("--runtime", type=int, default=120, help="the run's seconds (a status document each)")
    parser.add_argument("--collections", type=int, default=30, help="timed collections (after --disks untimed)")
    parser.add_argument("--disks", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="print where the timed collections spend")
    parser.add_argument("--sort", default="cumulative", help="with --profile: pstats' order (e.g. tottime)")
    parser.add_argument("--queries", action="store_true", help="print the SQL of the last collection")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_smoke_option(parser, db="sqlite", runtime=5, collections=2, disks=2)
    args = parse_args(parser, argv)
    if args.runtime < 2 or args.collections < 1 or args.disks < 1:
        parser.error("need --runtime >= 2, --collections >= 1, --disks >= 1")
    interrupt_on_signals()
    return measure_and_report(__file__, argv, args, "collection_cost", measure, report)


if __name__ == "__main__":
    sys.exit(main())
