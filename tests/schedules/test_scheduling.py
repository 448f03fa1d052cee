"""Schedule maths on fixed dates: fires across both 2026 DST changes in Berlin, windows, blackouts, validation
messages, and the stagger plans (auto-stagger checked as a property on generated targets).

Expected UTC instants are worked out by hand: Berlin is UTC+1 (CET) until 2026-03-29 01:00 UTC, UTC+2 (CEST)
until 2026-10-25 01:00 UTC, then UTC+1 again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import combinations, pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.scheduling import (
    Rule,
    Target,
    blackout_end,
    fires_and_next,
    fires_between,
    in_blackout,
    misfired,
    next_fires,
    sequence_offsets,
    stagger_offsets,
    validate,
    window_state,
)

BERLIN = "Europe/Berlin"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def daily_0230(**kw: object) -> Rule:
    return Rule(kind="cron", cron="30 2 * * *", timezone=BERLIN, **kw)


# ----------------------------------------------------------------------------- cron


def test_a_cron_schedule_in_utc_fires_at_its_wall_clock_times():
    rule = Rule(kind="cron", cron="15 */6 * * *")
    assert fires_between(rule, utc(2026, 5, 1), utc(2026, 5, 1, 18, 15)) == [
        utc(2026, 5, 1, 0, 15), utc(2026, 5, 1, 6, 15), utc(2026, 5, 1, 12, 15), utc(2026, 5, 1, 18, 15),
    ]  # fmt: skip


def test_fires_between_leaves_out_its_start_and_includes_its_end():
    rule = Rule(kind="cron", cron="0 * * * *")
    assert fires_between(rule, utc(2026, 5, 1, 1), utc(2026, 5, 1, 3)) == [utc(2026, 5, 1, 2), utc(2026, 5, 1, 3)]


def test_a_cron_schedule_returns_utc_instants_for_a_local_time_zone():
    fires = next_fires(Rule(kind="cron", cron="0 9 * * 1-5", timezone="America/New_York"), utc(2026, 1, 2, 15), 2)
    assert fires == [utc(2026, 1, 5, 14), utc(2026, 1, 6, 14)]  # 09:00 EST, Monday and Tuesday
    assert all(fire.tzinfo is UTC for fire in fires)


def test_a_daily_0230_berlin_schedule_fires_once_a_day_across_the_spring_change():
    fires = fires_between(daily_0230(), utc(2026, 3, 25), utc(2026, 4, 2, 23, 59))
    assert fires == [
        utc(2026, 3, 25, 1, 30), utc(2026, 3, 26, 1, 30), utc(2026, 3, 27, 1, 30), utc(2026, 3, 28, 1, 30),
        # 02:30 does not exist on the 29th: it fires when the clocks land, at 03:00 CEST.
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 30, 0, 30), utc(2026, 3, 31, 0, 30), utc(2026, 4, 1, 0, 30), utc(2026, 4, 2, 0, 30),
    ]  # fmt: skip


def test_a_daily_0230_berlin_schedule_fires_once_a_day_across_the_autumn_change():
    fires = fires_between(daily_0230(), utc(2026, 10, 20), utc(2026, 10, 30, 23, 59))
    assert fires == [
        utc(2026, 10, 20, 0, 30), utc(2026, 10, 21, 0, 30), utc(2026, 10, 22, 0, 30), utc(2026, 10, 23, 0, 30),
        utc(2026, 10, 24, 0, 30),
        # 02:30 happens twice on the 25th: it fires the first time, still in summer time.
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 26, 1, 30), utc(2026, 10, 27, 1, 30), utc(2026, 10, 28, 1, 30), utc(2026, 10, 29, 1, 30),
        utc(2026, 10, 30, 1, 30),
    ]  # fmt: skip


def test_an_hourly_schedule_fires_once_per_wall_clock_hour_when_the_clocks_go_back():
    fires = fires_between(
        Rule(kind="cron", cron="0 * * * *", timezone=BERLIN), utc(2026, 10, 24, 21), utc(2026, 10, 25, 3)
    )
    # 00:00, 01:00, 02:00 CEST, then 03:00 and 04:00 CET. The repeated 02:00 (01:00 UTC) does not fire again,
    # as the module documents: one fire per wall-clock hour, so UTC sees a two-hour gap once a year.
    assert fires == [
        utc(2026, 10, 24, 22), utc(2026, 10, 24, 23), utc(2026, 10, 25, 0), utc(2026, 10, 25, 2), utc(2026, 10, 25, 3),
    ]  # fmt: skip
    assert len(set(fires)) == len(fires)


def test_an_hourly_schedule_neither_repeats_nor_skips_a_utc_hour_when_the_clocks_go_forward():
    fires = fires_between(
        Rule(kind="cron", cron="0 * * * *", timezone=BERLIN), utc(2026, 3, 28, 22), utc(2026, 3, 29, 3)
    )
    assert fires == [
        utc(2026, 3, 28, 23),
        utc(2026, 3, 29, 0),
        utc(2026, 3, 29, 1),
        utc(2026, 3, 29, 2),
        utc(2026, 3, 29, 3),
    ]


def test_a_skipped_half_hour_fires_once_when_the_clocks_land():
    rule = Rule(kind="cron", cron="30 * * * *", timezone=BERLIN)
    # 01:30 CET, then 02:30 (skipped) at 03:00 CEST, then 03:30 CEST.
    assert fires_between(rule, utc(2026, 3, 29, 0), utc(2026, 3, 29, 1, 45)) == [
        utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30),
    ]  # fmt: skip


def test_several_skipped_times_collapse_into_one_fire():
    rule = Rule(kind="cron", cron="10,20,40 2 * * *", timezone=BERLIN)
    assert fires_between(rule, utc(2026, 3, 28, 12), utc(2026, 3, 30, 12)) == [
        utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 10), utc(2026, 3, 30, 0, 20), utc(2026, 3, 30, 0, 40),
    ]  # fmt: skip


def test_a_look_ahead_from_inside_the_repeated_hour_does_not_fire_its_first_pass_again():
    second_pass = utc(2026, 10, 25, 1, 10)  # 02:10 CET, the second time the clock reads 02:10
    assert next_fires(daily_0230(), second_pass, 1) == [utc(2026, 10, 26, 1, 30)]


def test_next_fires_agrees_with_fires_between():
    rule = Rule(kind="cron", cron="*/20 1-3 * * *", timezone=BERLIN)
    after = utc(2026, 10, 24, 12)
    ahead = next_fires(rule, after, 12)
    assert ahead == fires_between(rule, after, ahead[-1])
    assert all(earlier < later for earlier, later in pairwise(ahead))


RULES = st.one_of(
    st.builds(
        Rule,
        kind=st.just("cron"),
        cron=st.sampled_from(["30 2 * * *", "*/20 1-3 * * *", "0 * * * *", "*/5 * * * *", "0 0 31 4 *", "15 3 * * 0"]),
        timezone=st.sampled_from([BERLIN, "UTC", "America/New_York", "Australia/Sydney"]),
        blackouts=st.sampled_from([(), ("02:00-04:00",), ("23:00-01:00",)]),
    ),
    st.builds(
        Rule,
        kind=st.just("interval"),
        interval_minutes=st.integers(1, 2000),
        blackouts=st.sampled_from([(), ("02:00-04:00",)]),
        window_end=st.sampled_from([None, utc(2026, 10, 26)]),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    rule=RULES,
    after=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2026, 12, 31), timezones=st.just(UTC)),
    span=st.integers(0, 3 * 24 * 3600),
)
def test_the_dispatchers_single_walk_agrees_with_fires_between_and_next_fires(rule, after, span):
    until = after + timedelta(seconds=span)
    fires, upcoming = fires_and_next(rule, after, until)
    assert fires == fires_between(rule, after, until)
    assert upcoming == (next_fires(rule, until, 1) or [None])[0]


def test_an_expression_that_never_fires_gives_no_fires_instead_of_searching_forever():
    assert next_fires(Rule(kind="cron", cron="0 0 31 4 *"), utc(2026, 1, 1), 3) == []


def test_schedule_maths_refuses_naive_datetimes():
    with pytest.raises(ValueError, match="no time zone"):
        next_fires(daily_0230(), datetime(2026, 5, 1), 1)


# ----------------------------------------------------------------------------- intervals


def test_an_interval_schedule_fires_every_90_minutes_from_its_anchor():
    rule = Rule(kind="interval", interval_minutes=90, anchor=utc(2026, 5, 1, 0, 10))
    assert next_fires(rule, utc(2026, 5, 1, 3), 3) == [
        utc(2026, 5, 1, 3, 10),
        utc(2026, 5, 1, 4, 40),
        utc(2026, 5, 1, 6, 10),
    ]
    assert next_fires(rule, utc(2026, 5, 1, 4, 40), 1) == [utc(2026, 5, 1, 6, 10)]


def test_an_interval_schedule_fires_first_at_its_anchor_and_never_before():
    rule = Rule(kind="interval", interval_minutes=90, anchor=utc(2026, 5, 1, 0, 10))
    assert next_fires(rule, utc(2026, 4, 1), 2) == [utc(2026, 5, 1, 0, 10), utc(2026, 5, 1, 1, 40)]


def test_an_interval_schedule_is_anchored_at_its_window_start_by_default():
    rule = Rule(kind="interval", interval_minutes=90, window_start=utc(2026, 5, 1, 0, 7))
    assert next_fires(rule, utc(2026, 1, 1), 2) == [utc(2026, 5, 1, 0, 7), utc(2026, 5, 1, 1, 37)]


def test_an_interval_schedule_keeps_its_pace_in_utc_across_a_dst_change():
    rule = Rule(kind="interval", interval_minutes=60, anchor=utc(2026, 1, 1), timezone=BERLIN)
    fires = fires_between(rule, utc(2026, 10, 24, 23, 30), utc(2026, 10, 25, 2, 30))
    assert fires == [utc(2026, 10, 25, 0), utc(2026, 10, 25, 1), utc(2026, 10, 25, 2)]


# ----------------------------------------------------------------------------- windows


MAY_WEEK = {"window_start": utc(2026, 5, 1), "window_end": utc(2026, 5, 8)}


def test_nothing_fires_before_the_window_starts_or_once_it_has_ended():
    rule = Rule(kind="cron", cron="0 0 * * *", **MAY_WEEK)
    fires = fires_between(rule, utc(2026, 4, 1), utc(2026, 6, 1))
    # The start is included, the end is not: 1 May 00:00 fires, 8 May 00:00 does not.
    assert fires == [utc(2026, 5, day) for day in range(1, 8)]


def test_next_fires_is_empty_once_the_window_has_ended():
    assert next_fires(Rule(kind="cron", cron="0 0 * * *", **MAY_WEEK), utc(2026, 5, 7, 0, 0, 1), 5) == []


def test_the_window_state_includes_the_start_and_excludes_the_end():
    rule = Rule(kind="cron", cron="0 0 * * *", **MAY_WEEK)
    assert window_state(rule, utc(2026, 4, 30, 23, 59, 59)) == "before"
    assert window_state(rule, utc(2026, 5, 1)) == "inside"
    assert window_state(rule, utc(2026, 5, 7, 23, 59, 59)) == "inside"
    assert window_state(rule, utc(2026, 5, 8)) == "after"
    assert window_state(Rule(kind="cron", cron="0 0 * * *"), utc(1999, 1, 1)) == "inside"


# ----------------------------------------------------------------------------- blackouts


def test_a_blackout_covers_its_start_but_not_its_end_in_local_time():
    rule = Rule(kind="cron", cron="0 * * * *", timezone=BERLIN, blackouts=("08:00-18:00",))
    assert in_blackout(rule, utc(2026, 5, 4, 6)) == "08:00-18:00"  # 08:00 CEST
    assert in_blackout(rule, utc(2026, 5, 4, 15, 59, 59)) == "08:00-18:00"
    assert in_blackout(rule, utc(2026, 5, 4, 16)) is None  # 18:00 CEST
    assert in_blackout(rule, utc(2026, 5, 4, 5, 59)) is None


def test_a_blackout_that_wraps_midnight_covers_both_evening_and_morning():
    rule = Rule(kind="cron", cron="0 * * * *", timezone=BERLIN, blackouts=("22:00-06:00",))
    assert in_blackout(rule, utc(2026, 5, 4, 20)) == "22:00-06:00"  # 22:00 CEST
    assert in_blackout(rule, utc(2026, 5, 4, 23)) == "22:00-06:00"  # 01:00 CEST
    assert in_blackout(rule, utc(2026, 5, 5, 4)) is None  # 06:00 CEST
    assert in_blackout(rule, utc(2026, 5, 4, 12)) is None
    assert blackout_end(rule, utc(2026, 5, 4, 21)) == utc(2026, 5, 5, 4)
    assert blackout_end(rule, utc(2026, 5, 5, 1)) == utc(2026, 5, 5, 4)


def test_fires_inside_a_blackout_are_left_out():
    rule = Rule(kind="cron", cron="0 * * * *", timezone=BERLIN, blackouts=("22:00-06:00", "12:00-13:30"))
    fires = fires_between(rule, utc(2026, 5, 4, 17, 30), utc(2026, 5, 5, 12))
    local_hours = [(fire + timedelta(hours=2)).hour for fire in fires]
    assert local_hours == [20, 21, 6, 7, 8, 9, 10, 11, 14]


def test_blackout_end_is_none_outside_a_blackout_and_follows_overlapping_ranges():
    rule = Rule(kind="interval", interval_minutes=60, blackouts=("08:00-12:00", "11:00-14:00"))
    assert blackout_end(rule, utc(2026, 5, 4, 7)) is None
    assert blackout_end(rule, utc(2026, 5, 4, 9)) == utc(2026, 5, 4, 14)


def test_a_night_blackout_ends_at_local_morning_when_the_clocks_go_back():
    rule = Rule(kind="cron", cron="*/10 * * * *", timezone=BERLIN, blackouts=("22:00-06:00",))
    assert blackout_end(rule, utc(2026, 10, 24, 23)) == utc(2026, 10, 25, 5)  # 06:00 CET
    assert next_fires(rule, utc(2026, 10, 24, 19, 55), 2) == [utc(2026, 10, 25, 5), utc(2026, 10, 25, 5, 10)]


def test_a_blackout_ending_in_the_skipped_hour_ends_when_the_clocks_land():
    rule = Rule(kind="interval", interval_minutes=60, timezone=BERLIN, blackouts=("01:30-02:30",))
    assert blackout_end(rule, utc(2026, 3, 29, 0, 45)) == utc(2026, 3, 29, 1)  # 03:00 CEST


def test_a_rule_whose_every_fire_is_blacked_out_gives_no_fires_after_a_bounded_search():
    assert next_fires(daily_0230(blackouts=("02:00-04:00",)), utc(2026, 1, 1), 1) == []


def test_blackouts_covering_the_whole_day_stop_every_fire_without_an_endless_search():
    rule = Rule(kind="interval", interval_minutes=60, blackouts=("06:00-18:00", "18:00-06:00"))
    assert next_fires(rule, utc(2026, 1, 1), 1) == []
    with pytest.raises(ValueError, match="cover the whole day"):
        blackout_end(rule, utc(2026, 1, 1, 12))


# ----------------------------------------------------------------------------- validation


def test_a_sound_rule_validates_cleanly():
    assert validate(daily_0230(blackouts=("08:00-18:00",), **MAY_WEEK), stagger_s=600, n_targets=4) == {}
    assert validate(Rule(kind="interval", interval_minutes=90)) == {}


def test_an_out_of_range_cron_field_is_named_with_a_valid_example():
    assert validate(Rule(kind="cron", cron="61 * * * *")) == {
        "cron": "'61 * * * *' is not a valid cron expression (minute 61 is out of range 0-59); "
        "use five fields like '30 2 * * *' (02:30 daily)"
    }


def test_a_cron_expression_with_seconds_is_refused():
    message = validate(Rule(kind="cron", cron="0 30 2 * * *"))["cron"]
    assert "has 6 fields, not 5" in message
    assert "'30 2 * * *'" in message


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("0 25 * * *", "hour 25 is out of range 0-23"),
        ("0 0 * * fooday", "the day of week field 'fooday' is not valid"),
        ("*/0 * * * *", "the minute field '*/0' is not valid"),
        ("0 0 30 2 *", "never fires"),
        ("R * * * *", "random (R) or hashed (H)"),
        ("", "enter a cron expression"),
    ],
)
def test_a_bad_cron_expression_is_refused_with_the_reason(expression: str, problem: str):
    message = validate(Rule(kind="cron", cron=expression))["cron"]
    assert problem in message
    assert "'30 2 * * *' (02:30 daily)" in message


def test_an_unknown_time_zone_is_refused_with_examples():
    assert validate(Rule(kind="cron", cron="30 2 * * *", timezone="Mars/Olympus")) == {
        "timezone": "'Mars/Olympus' is not a known IANA time zone; use a name like 'Europe/Berlin', "
        "'America/New_York' or 'UTC'"
    }


def test_a_window_that_ends_before_it_starts_is_refused():
    rule = daily_0230(window_start=utc(2026, 5, 8), window_end=utc(2026, 5, 1))
    assert validate(rule) == {
        "window_end": "the window ends at 2026-05-01 02:00 CEST, before it starts at 2026-05-08 02:00 CEST; "
        "end it after the start, e.g. 2026-05-15 02:00 CEST for a week from 2026-05-08 02:00 CEST "
        "(times in the schedule's zone, Europe/Berlin)"
    }
    assert (
        "starts and ends"
        in validate(daily_0230(window_start=utc(2026, 5, 1), window_end=utc(2026, 5, 1)))["window_end"]
    )


def test_a_window_with_no_fire_in_it_is_refused_with_the_first_fire_it_would_need():
    yearly = Rule(kind="cron", cron="0 0 1 1 *", timezone=BERLIN, **MAY_WEEK)
    assert validate(yearly) == {
        "window_end": "no fire of this schedule falls between 2026-05-01 02:00 CEST and 2026-05-08 02:00 CEST; "
        "end it after 2027-01-01 00:00 CET, its first fire (times in the schedule's zone, Europe/Berlin)"
    }


def test_blackouts_that_swallow_every_fire_are_refused():
    message = validate(daily_0230(blackouts=("02:00-04:00",)))["blackouts"]
    assert message == "every fire of this schedule falls inside these blackouts; shorten them, e.g. '08:00-18:00'"


def test_an_interval_of_zero_minutes_is_refused():
    assert "e.g. 60" in validate(Rule(kind="interval", interval_minutes=0))["interval_minutes"]
    assert "interval_minutes" in validate(Rule(kind="interval"))


@pytest.mark.parametrize(
    ("blackouts", "problem"),
    [
        (("8-18",), "'8-18' is not a daily range"),
        (("25:00-26:00",), "'25:00-26:00' is not a time of day"),
        (("08:00-08:00",), "starts when it ends"),
        (("00:00-12:00", "11:00-00:00"), "cover the whole day"),
    ],
)
def test_a_bad_blackout_is_refused_with_an_example(blackouts: tuple[str, ...], problem: str):
    message = validate(daily_0230(blackouts=blackouts))["blackouts"]
    assert problem in message
    assert "'08:00-18:00' or '22:00-06:00'" in message


def test_a_stagger_that_does_not_fit_in_the_period_says_the_largest_that_does():
    hourly = Rule(kind="cron", cron="0 * * * *")
    assert validate(hourly, stagger_s=1200, n_targets=5) == {
        "stagger_s": "5 targets 1200 s apart need 4800 s, but fires can come 3600 s apart; "
        "the largest stagger that fits is 899 s, e.g. 840"
    }
    assert validate(hourly, stagger_s=899, n_targets=5) == {}
    assert validate(hourly, stagger_s=900, n_targets=5) != {}


def test_the_stagger_check_counts_the_profile_sequence_and_the_shortest_cron_gap():
    twice_an_hour = Rule(kind="cron", cron="0,20 * * * *")  # gaps of 20 and 40 minutes
    message = validate(twice_an_hour, stagger_s=300, n_targets=3, sequence_s=700)["stagger_s"]
    assert "fires can come 1200 s apart" in message
    assert "the largest stagger that fits is 249 s" in message
    assert validate(twice_an_hour, n_targets=1, sequence_s=1200) == {
        "stagger_s": "the profiles need 1200 s, but fires can come 1200 s apart; "
        "shorten the profiles or fire less often, e.g. every 21 minutes"
    }
    assert "no stagger fits" in validate(twice_an_hour, stagger_s=10, n_targets=3, sequence_s=1300)["stagger_s"]


def test_an_interval_stagger_must_end_before_the_next_fire():
    rule = Rule(kind="interval", interval_minutes=90)
    assert validate(rule, stagger_s=2699, n_targets=3) == {}
    assert "largest stagger that fits is 2699 s" in validate(rule, stagger_s=2700, n_targets=3)["stagger_s"]


# ----------------------------------------------------------------------------- stagger plans


def test_a_fixed_stagger_starts_target_i_at_i_times_the_stagger():
    targets = [Target(key=n, host="h", site="", duration_s=10_000) for n in range(4)]
    assert stagger_offsets(targets, stagger_s=600) == [0, 600, 1200, 1800]


def test_auto_stagger_queues_targets_per_host_and_starts_other_hosts_at_once():
    targets = [
        Target("a1", host="a", site="dc1", duration_s=100),
        Target("a2", host="a", site="dc1", duration_s=50),
        Target("b1", host="b", site="dc1", duration_s=300),
        Target("a3", host="a", site="dc1", duration_s=10),
    ]
    assert stagger_offsets(targets, auto=True) == [0, 105, 0, 160]


def test_auto_stagger_by_site_queues_every_host_of_a_site():
    targets = [
        Target("a1", host="a", site="dc1", duration_s=100),
        Target("b1", host="b", site="dc1", duration_s=300),
        Target("c1", host="c", site="dc2", duration_s=50),
        Target("d1", host="d", site="", duration_s=70),
        Target("e1", host="e", site="", duration_s=70),
    ]
    # Hosts without a site are not lumped together: each is its own site.
    assert stagger_offsets(targets, auto=True, by_site=True, gap_s=10) == [0, 110, 0, 0, 0]


def test_auto_stagger_fills_an_earlier_gap_when_a_short_run_fits_in_it():
    targets = [
        Target(1, host="a", site="", duration_s=10),
        Target(2, host="a", site="", duration_s=100),
    ]
    assert stagger_offsets(targets, auto=True, gap_s=0) == [0, 10]


def _overlap_free(targets: list[Target], offsets: list[float], group: str, gap_s: float) -> bool:
    for i, j in combinations(range(len(targets)), 2):
        if getattr(targets[i], group) != getattr(targets[j], group):
            continue
        a, b = (offsets[i], offsets[i] + targets[i].duration_s), (offsets[j], offsets[j] + targets[j].duration_s)
        if not (a[1] + gap_s <= b[0] + 1e-6 or b[1] + gap_s <= a[0] + 1e-6):
            return False
    return True


TARGETS = st.lists(
    st.builds(
        Target,
        key=st.integers(),
        host=st.sampled_from(["h1", "h2", "h3", "h4"]),
        site=st.just(""),
        duration_s=st.floats(min_value=0, max_value=7200, allow_nan=False),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None, database=None)
@given(targets=TARGETS, gap_s=st.sampled_from([0.0, 5.0, 30.0]))
def test_auto_stagger_never_overlaps_two_runs_on_a_host(targets: list[Target], gap_s: float):
    offsets = stagger_offsets(targets, auto=True, gap_s=gap_s)
    assert len(offsets) == len(targets)
    assert all(offset >= 0 for offset in offsets)
    assert _overlap_free(targets, offsets, "host", gap_s)
    first_on_host = {}
    for target, offset in zip(targets, offsets, strict=True):
        first_on_host.setdefault(target.host, offset)
    assert set(first_on_host.values()) <= {0}


@settings(max_examples=200, deadline=None, database=None)
@given(
    targets=TARGETS, sites=st.fixed_dictionaries({h: st.sampled_from(["s1", "s2"]) for h in ["h1", "h2", "h3", "h4"]})
)
def test_auto_stagger_by_site_never_overlaps_two_runs_at_a_site(targets: list[Target], sites: dict[str, str]):
    targets = [Target(t.key, t.host, sites[t.host], t.duration_s) for t in targets]
    offsets = stagger_offsets(targets, auto=True, by_site=True)
    assert _overlap_free(targets, offsets, "site", 5)
    first_at_site = {}
    for target, offset in zip(targets, offsets, strict=True):
        first_at_site.setdefault(target.site, offset)
    assert set(first_at_site.values()) <= {0}


def test_sequence_offsets_run_the_profiles_one_after_another():
    assert sequence_offsets([60, 120, 30]) == [0, 65, 190]
    assert sequence_offsets([60, 120], gap_s=0) == [0, 60]
    assert sequence_offsets([]) == []


def test_a_fire_is_misfired_only_when_missed_by_more_than_the_grace():
    fire = utc(2026, 5, 1, 2, 30)
    assert not misfired(fire, fire + timedelta(seconds=300), 300)
    assert misfired(fire, fire + timedelta(seconds=301), 300)
    assert not misfired(fire, fire - timedelta(seconds=10), 300)
