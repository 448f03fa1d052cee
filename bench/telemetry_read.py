"""What a second of a host's telemetry costs the worker: its seven /proc files read over the session's SFTP
channel, each opened, read and closed (as before issue 34), against kept open from one second to the next
(jobs.ssh.files.OpenFiles, as the observation steps read them now), on a loopback sshd.

    .venv/bin/python bench/telemetry_read.py [--reads 200] [--smoke]

Each way reads the files `--reads` times back to back after a few untimed reads; the report gives the worker
process's CPU and the wall time per reading (one second's telemetry of one host). Target: the kept-open way at
most half the CPU of the other. Exit status: 0 met, 1 missed, 2 the measurement failed, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from benchkit import (
    ROOT,
    Stack,
    add_smoke_option,
    interrupt_on_signals,
    login_user,
    parse_args,
    run_guarded,
    start_sshd,
    verdict_status,
)

MAX_BYTES = 2**20
WARMUP = 5


def cost(read: Callable[[], object], reads: int) -> tuple[float, float]:
    """(CPU ms, wall ms) of this process per reading."""
    for _ in range(WARMUP):
        read()
    cpu, wall = time.process_time(), time.monotonic()
    for _ in range(reads):
        read()
    return 1000 * (time.process_time() - cpu) / reads, 1000 * (time.monotonic() - wall) / reads


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from jobs import ssh
    from jobs.telemetry import proc

    private_key = start_sshd(stack)
    key = stack.sshd.host_key
    target = ssh.Target("127.0.0.1", stack.sshd.port, login_user(), ssh.HostKey(key.key_type, key.key_b64,
                        key.fingerprint), private_key=private_key)  # fmt: skip
    with ssh.connect(target) as conn:

        def each_opened() -> object:
            return {key: conn.read_from(path, 0, max_bytes=MAX_BYTES) for key, path in proc.FILES.items()}

        kept = conn.open_files(dict(proc.FILES))
        try:
            opened = cost(each_opened, args.reads)
            kept_open = cost(lambda: kept.read(max_bytes=MAX_BYTES), args.reads)
        finally:
            kept.close()
    return {"opened": opened, "kept_open": kept_open, "reads": args.reads}


def report(r: dict[str, Any]) -> bool:
    (cpu_a, wall_a), (cpu_b, wall_b) = r["opened"], r["kept_open"]
    met = cpu_b <= cpu_a / 2
    print(f"{r['reads']} readings of the seven /proc files each way, per reading (one host's second):")
    print(f"  opened, read and closed each time: CPU {cpu_a:.2f} ms, wall {wall_a:.2f} ms")
    print(f"  kept open (OpenFiles):             CPU {cpu_b:.2f} ms, wall {wall_b:.2f} ms")
    print(f"target: kept open at most half the CPU ({cpu_b / cpu_a:.2f} of it): {'MET' if met else 'MISSED'}")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=200, help="timed readings each way (default 200)")
    add_smoke_option(parser, reads=5)
    args = parse_args(parser, argv)
    if args.reads < 1:
        parser.error("need --reads >= 1")
    interrupt_on_signals()
    stack = Stack("benchweb-telemetry-read-")
    status, result = run_guarded("telemetry_read", stack, lambda: measure(args, stack))
    if result is None:
        return status
    return verdict_status(args, report(result))


if __name__ == "__main__":
    sys.exit(main())
