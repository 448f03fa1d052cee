"""A host's clock read over a real session (jobs/remote/clock.py): the test sshd runs on this machine, so its clock
is the worker's, and the offset NTP's rule gives must be 0 within the uncertainty it states."""

from __future__ import annotations

import pytest

from jobs import remote, ssh
from jobs.sets.group_clocks import clock_offset

pytestmark = pytest.mark.slow

# The host's reading is parsed from text to a float of epoch seconds: some 0.2 µs of rounding.
FLOAT_S = 1e-6


def test_probes_over_one_session_find_the_same_machines_clock_at_offset_zero_within_its_uncertainty(sshd):
    with ssh.connect(sshd.target()) as connection:
        probes = remote.clock_probes(connection)
        again = remote.clock_probes(connection, count=2)

    assert len(probes) == remote.PROBES and len(again) == 2
    for t0, t1, t2, t3 in probes + again:
        # One reading of the host's clock, taken between sending and the answer (the same clock here).
        assert t1 == t2 and t0 - FLOAT_S <= t1 <= t3 + FLOAT_S
    found = clock_offset(probes)
    assert abs(found.offset_s) <= found.uncertainty_s + FLOAT_S
    # The shortest of five round trips in a pooled shell on loopback: a fork and exec of date, well under 0.1 s.
    assert 0 < found.delay_s < 0.1 and found.uncertainty_s == pytest.approx(found.delay_s / 2)
