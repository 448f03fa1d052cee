"""How deeply JSON arrays and objects nest, measured without recursing (pure).

Python's json reader recurses once a level and gives up near the interpreter's recursion limit (about 1,000)
with a RecursionError, where it gives up depending on how deep the caller's own stack already is: the same
text can be read at one call and refused at the next. Whatever reads a value just under the limit (a
serializer, the database's JSON encoder) can run out of stack in turn. So every reader of JSON from outside
(API bodies, fio output, a form's JSON field) refuses anything nested deeper than MAX_DEPTH, far beyond what
benchweb or fio ever write and far below what Python can read.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 32


def nests_too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and dicts in value nest more than limit levels (value itself is level 1). Level by level:
    a fleet's collection checks some 120 fio documents a run, so no tuple is made per value."""
    level: list[Any] = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        below = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, dict | list):
                    below.append(child)
        level, depth = below, depth + 1
    return False
