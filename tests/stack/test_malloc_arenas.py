"""A worker process limits glibc's malloc arenas before its threads start (benchweb/celery.py): a fleet's worker
whose threads parse fio outputs at once kept every thread's arena grown."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap

import pytest

# A fresh interpreter: 8 threads allocate at once, then malloc_info says how many heaps (arenas) the process has.
_HEAPS = textwrap.dedent("""
    import ctypes, os, re, sys, tempfile, threading
    if sys.argv[1] == "limited":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchweb.settings")
        from benchweb.celery import limit_malloc_arenas
        assert limit_malloc_arenas()
    go = threading.Barrier(8)
    kept = []
    def allocate():
        go.wait()
        kept.append([bytearray(200_000) for _ in range(20)])
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype = ctypes.c_void_p
    path = tempfile.mktemp()
    handle = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(handle))
    libc.fclose(ctypes.c_void_p(handle))
    print(len(re.findall(r'<heap nr="', open(path).read())))
""")


def _heaps(mode: str) -> int:
    found = subprocess.run([sys.executable, "-c", _HEAPS, mode], capture_output=True, text=True, check=True)
    return int(found.stdout.strip())


def test_a_worker_keeps_two_malloc_arenas_where_threads_would_each_take_one() -> None:
    try:
        ctypes.CDLL("libc.so.6").mallopt  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc: its malloc arenas do not exist here")
    assert _heaps("plain") > 2  # each thread took an arena of its own
    assert _heaps("limited") <= 2
