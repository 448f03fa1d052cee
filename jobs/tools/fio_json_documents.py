"""Finding and decoding the JSON documents in fio's output (docs/reference/fio-output.md#json-output): text mixed
around them, the cumulative stream --status-interval writes, a document cut short at the end, bare nan and inf
where a number belongs, and the numbers of the last document remembering their text (pure). jobs/tools/fio_json.py
reads what they say."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from jobs import nesting
from jobs.tools.summary import ParseError

_DOC_START = re.compile(r'\{\s*"fio version"\s*:')
# A JSON string, or a bare nan/inf where a number belongs: fio prints doubles with %f (#numbers-json-cannot-hold).
_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(?<=[:\[,\s])-?(?:nan|inf(?:inity)?)\b', re.IGNORECASE)


class _Float(float):
    """A JSON number with a fraction, remembering its text ("1506.502000"): summary["printed"] shows fio's digits."""

    text: str

    def __new__(cls, text: str) -> _Float:
        number = super().__new__(cls, text)
        number.text = text
        return number


class _Int(int):
    """A JSON whole number, remembering its text."""

    text: str

    def __new__(cls, text: str) -> _Int:
        number = super().__new__(cls, text)
        number.text = text
        return number


# strict=False: fio does not escape control characters. Only a stream's last document gives printed figures, so
# only it is read with the hooks that keep each number's text (they cost ~80 % of a 120-document stream's parse).
# The status documents before it are read by orjson (_status); what orjson refuses, by json's C scanner.
_DECODER = json.JSONDecoder(strict=False, parse_float=_Float, parse_int=_Int)
_PLAIN_DECODER = json.JSONDecoder(strict=False)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _decode(text: str, start: int, limit: int, decoder: json.JSONDecoder = _DECODER) -> tuple[dict[str, Any], int]:
    doc, end = _decode_any_depth(text, start, limit, decoder)
    # json's own limit depends on the caller's stack: a document it read once could fail at the next reading.
    if nesting.nests_too_deep(doc):
        raise _undecodable(text, start, too_deep=True)
    return doc, end


def _decode_any_depth(text: str, start: int, limit: int, decoder: json.JSONDecoder) -> tuple[dict[str, Any], int]:
    try:
        return decoder.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    except (ValueError, RecursionError) as exc:
        raise _undecodable(text, start, too_deep=isinstance(exc, RecursionError)) from exc
    shifts: list[tuple[int, int]] = []

    def to_null(match: re.Match[str]) -> str:
        if match.group().startswith('"'):
            return match.group()
        shifts.append((match.start(), len("null") - len(match.group())))
        return "null"

    cleaned = _NON_FINITE.sub(to_null, text[start:limit])
    try:
        doc, end = decoder.raw_decode(cleaned)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"line {_line_of(text, start)}: the fio JSON document starting here is invalid: {exc.msg} "
            f"at its line {exc.lineno}, column {exc.colno}."
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise _undecodable(text, start, too_deep=isinstance(exc, RecursionError)) from exc
    moved = 0
    for position, shift in shifts:
        if position + moved >= end:
            break
        moved += shift
    return doc, start + end - moved


def _status(text: str, start: int, limit: int) -> tuple[dict[str, Any], int]:
    """A status document, one a stream holds before its last: benchweb reads from it only the numbers of its
    samples and live figures (jobs/tools/fio_json.py `_samples`, jobs/runners.py `progress`), never keeps it.

    orjson reads a 120-document stream in about a quarter of json's time and needs no nesting check after it: its
    limit (1,024 levels, an error) does not move with the caller's stack, and none of the document outlives the
    read. It reads a whole number beyond 64 bits as the nearest double, where json keeps it whole: a counter fio
    would need 585 years of a billion I/Os a second to print, so nothing measured differs. What it refuses — text
    after the document, a bare nan, a control character in a string, a lone surrogate — goes the way every
    document went before, through json and the nesting check."""
    try:
        doc = orjson.loads(text[start:limit])
    except orjson.JSONDecodeError:
        return _decode(text, start, limit, _PLAIN_DECODER)
    return doc, limit


def _undecodable(text: str, start: int, *, too_deep: bool) -> ParseError:
    """Valid JSON that benchweb does not read: an integer of more than 4300 digits (int() refuses it) or nesting
    deeper than jobs/nesting.py allows. fio prints neither."""
    why = f"nests more than {nesting.MAX_DEPTH} levels deep" if too_deep else "holds a number too long to read"
    return ParseError(
        f"line {_line_of(text, start)}: the fio JSON document starting here {why}; fio never prints one like it."
    )


def fio_json_documents(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every fio JSON document in text, in order, and the other lines around them (#text-mixed-into-the-json,
    #several-documents-from-status-interval). The numbers of
    the last document remember their text (summary["printed"]); those of the others are plain int and float."""
    docs: list[dict[str, Any]] = []
    other: list[str] = []
    pos = 0
    last = (0, 0)
    while match := _DOC_START.search(text, pos):
        other.append(text[pos : match.start()])
        following = _DOC_START.search(text, match.end())
        if following:
            doc, pos = _status(text, match.start(), following.start())
            docs.append(doc)
            last = (match.start(), following.start())
            continue
        try:
            doc, pos = _decode(text, match.start(), len(text))
        except ParseError as exc:
            if not docs:
                raise
            # A status stream read while fio is still writing ends in half a document.
            other.append(f"{exc} It was ignored; the summary comes from the document before it.")
            pos = len(text)
            docs[-1], _ = _decode(text, *last)
        else:
            docs.append(doc)
        break
    other.append(text[pos:])
    return docs, [line.strip() for chunk in other for line in chunk.splitlines() if line.strip()]
