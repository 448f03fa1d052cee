"""jobs/nesting.py: how deeply JSON values nest, counted exactly at the limit."""

from __future__ import annotations

import pytest

from jobs.nesting import MAX_DEPTH, nests_too_deep


def _nested(depth: int, *, wide: bool) -> object:
    """A value `depth` levels deep, dicts and lists in turn; `wide` puts shallow siblings and scalars beside each
    level, so that the deepest branch is not the first one met."""
    value: object = [] if depth % 2 else {}
    for level in range(depth - 1, 0, -1):
        inner = value
        if level % 2:
            value = [1, "x", {}, inner] if wide else [inner]
        else:
            value = {"n": None, "s": [2], "deep": inner} if wide else {"deep": inner}
    return value


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 3, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 8])
def test_a_value_nests_too_deep_exactly_past_the_limit(depth: int, wide: bool) -> None:
    assert nests_too_deep(_nested(depth, wide=wide)) is (depth > MAX_DEPTH)
    assert nests_too_deep(_nested(depth, wide=wide), limit=depth) is False
    assert nests_too_deep(_nested(depth, wide=wide), limit=depth - 1) is True


def test_scalars_nest_nothing() -> None:
    assert not nests_too_deep(1) and not nests_too_deep("x") and not nests_too_deep(None)
    assert nests_too_deep([], limit=0) and not nests_too_deep([], limit=1)
