"""A group-size sweep's plan, pure: the default sizes, the sizes refused with the fix, and where each size's members
sit among the sweep's members."""

from __future__ import annotations

import pytest

from jobs.sets import group_sizes


@pytest.mark.parametrize(
    ("disks", "sizes"),
    [
        (2, [1, 2]),
        (3, [1, 2, 3]),
        (4, [1, 2, 4]),
        (5, [1, 2, 4, 5]),
        (16, [1, 2, 4, 8, 16]),
        (100, [1, 2, 4, 8, 16, 32, 64, 100]),
    ],
)
def test_the_default_sizes_double_from_one_and_end_at_the_number_of_disks(disks, sizes):
    assert group_sizes.default_sizes(disks) == sizes
    assert group_sizes.sizes_problem(sizes, disks) is None


@pytest.mark.parametrize(
    ("sizes", "disks", "problem"),
    [
        ([3], 3, "at least two group sizes; 1 was given"),
        ([0, 3], 3, "Each group size is a whole number of members, 1 or more"),
        ([1, 2.5, 3], 3, "Each group size is a whole number of members"),
        ([1, 3, 2, 3], 3, "must grow from one to the next; 1,3,2,3 do not"),
        ([1, 2], 3, "The last group size is the number of disks given (3), not 2"),
        ([1, 2, 4], 3, "not 4: each disk is a member of the largest group"),
    ],
)
def test_sizes_that_cannot_be_a_sweep_are_named_with_the_fix(sizes, disks, problem):
    assert problem in (group_sizes.sizes_problem(sizes, disks) or "")


def test_each_size_takes_its_members_after_the_smaller_sizes_in_disk_order():
    steps = group_sizes.steps([1, 2, 4])

    assert [(s.number, s.members, list(s.indexes)) for s in steps] == [
        (1, 1, [0]), (2, 2, [1, 2]), (3, 4, [3, 4, 5, 6])
    ]  # fmt: skip
    assert group_sizes.step_of([1, 2, 4], 4) == steps[2]
    assert group_sizes.place([1, 2, 4], 4) == "member 2 of size 3 (4 members)"
    assert group_sizes.place([1, 2, 4], 0) == "member 1 of size 1 (1 member)"
    with pytest.raises(ValueError, match="7 is past the last member"):
        group_sizes.step_of([1, 2, 4], 7)
