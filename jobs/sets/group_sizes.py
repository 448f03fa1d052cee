"""A group-size sweep's plan (pure): the group sizes it runs, and where each size's members sit among the sweep's.

A group-size sweep runs one profile as a synchronised group of the first k of its disks, for each size k in turn:
1, 2, 4, … up to the number of disks and always ending at it, or the sizes given. Its members are made at once, a
size's members after the smaller size's, each size's in disk order, so a member's place in the set (its set_index)
says which size it belongs to and which of the size's disks it runs on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


def default_sizes(disks: int) -> list[int]:
    """1, 2, 4, … below `disks`, then `disks` itself: 5 disks run 1, 2, 4 and 5 members."""
    sizes = []
    size = 1
    while size < disks:
        sizes.append(size)
        size *= 2
    return [*sizes, disks]


def sizes_problem(sizes: Sequence[int], disks: int) -> str | None:
    """Why `sizes` cannot be a sweep's over `disks` disks, naming the fix; None when they can: at least two sizes,
    each a whole number of members, growing, the last the number of disks (each disk is in the largest group)."""
    if len(sizes) < 2:
        return f"A group-size sweep runs at least two group sizes; {len(sizes)} was given: give two or more, e.g. 1,2."
    if any(isinstance(size, bool) or not isinstance(size, int) or size < 1 for size in sizes):
        return "Each group size is a whole number of members, 1 or more: e.g. 1,2,4."
    if any(after <= before for before, after in pairwise(sizes)):
        return (
            f"The group sizes must grow from one to the next; {_listed(sizes)} do not: give them in order, e.g. 1,2,4."
        )
    if sizes[-1] != disks:
        return (
            f"The last group size is the number of disks given ({disks}), not {sizes[-1]}: each disk is a member of "
            f"the largest group; give {disks} disks, or end the sizes at {disks}."
        )
    return None


@dataclass(frozen=True)
class Step:
    """One size of the sweep: its place (number, from 1), its members (the first `members` disks), and the set_index
    of its first member; its members' set_index run from `first` to `first + members - 1`."""

    number: int
    members: int
    first: int

    @property
    def indexes(self) -> range:
        return range(self.first, self.first + self.members)


def steps(sizes: Sequence[int]) -> list[Step]:
    """The sweep's sizes in order, each with the place of its first member."""
    found = []
    first = 0
    for number, size in enumerate(sizes, 1):
        found.append(Step(number, size, first))
        first += size
    return found


def step_of(sizes: Sequence[int], set_index: int) -> Step:
    """The size a member belongs to, by its place in the set; ValueError past the last size's members."""
    for step in steps(sizes):
        if set_index in step.indexes:
            return step
    raise ValueError(f"set_index: {set_index} is past the last member of sizes {_listed(sizes)}")


def place(sizes: Sequence[int], set_index: int) -> str:
    """'member 2 of size 3 (3 members)': a member as a person finds it on the sweep's page."""
    step = step_of(sizes, set_index)
    return f"member {set_index - step.first + 1} of size {step.number} ({_members(step.members)})"


def _members(count: int) -> str:
    return f"{count} member{'' if count == 1 else 's'}"


def _listed(sizes: Sequence[int]) -> str:
    return ",".join(str(size) for size in sizes)
