from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.request import Request

# DRF reads ?format= on every request to choose the renderer.
ALWAYS_ALLOWED = ("format",)
MAX_PAGE = 2**63 - 1  # past the last page is a 404; past this, not a page number at all


class KnownParameters:
    """Refuses a query parameter a list does not take, an empty filter, or a page number or size that is not one.
    Ignoring them answers another question than the one asked, silently: ?ordering=password would look sorted,
    ?stat=failed filtered, ?page_size=-1 sized. A list takes its paginator's parameters and, on the list action
    itself, the view's `list_parameters` (its filters)."""

    page_size: int
    page_size_query_param: str
    max_page_size: int

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        self.check_parameters(request, view)
        return super().paginate_queryset(queryset, request, view)  # type: ignore[misc]

    def own_parameters(self) -> tuple[str, ...]:
        raise NotImplementedError

    def whole_numbers(self) -> dict[str, tuple[int, int]]:
        """Parameters that take a whole number, with its bounds. A page size over max_page_size is not refused:
        the page holds max_page_size, as the schema's description says, and `next` leads on."""
        return {self.page_size_query_param: (1, MAX_PAGE)}

    def check_parameters(self, request: Request, view: Any) -> None:
        filters = tuple(getattr(view, "list_parameters", ())) if getattr(view, "action", None) == "list" else ()
        allowed = (*self.own_parameters(), *filters)
        problems = {
            name: [_unknown_parameter(name, allowed)]
            for name in sorted(set(request.query_params) - {*allowed, *ALWAYS_ALLOWED})
        }
        for name in filters:
            if "" in request.query_params.getlist(name):
                problems[name] = [f"Give {name} a value, or leave the parameter out."]
        for name, (low, high) in self.whole_numbers().items():
            values = request.query_params.getlist(name)
            if values and not _whole_number_within(values, low, high):
                got = ", ".join(map(repr, values))
                bounds = f"of {low} or more" if high == MAX_PAGE else f"from {low} to {high}"
                problems[name] = [f"Give {name} once, as a whole number {bounds}; got {got}."]
        if problems:
            raise ValidationError(problems)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)  # type: ignore[misc]
        for parameter in parameters:
            if parameter["name"] in (bounds := self.whole_numbers()):
                low, high = bounds[parameter["name"]]
                parameter["schema"] = {"type": "integer", "minimum": low, "maximum": high}
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = (
                    f"Results per page, {self.page_size} unless given; more than {self.max_page_size} gives "
                    f"{self.max_page_size}."
                )
        return parameters


def _whole_number_within(values: list[str], low: int, high: int) -> bool:
    if len(values) != 1 or not (values[0].isascii() and values[0].isdigit()) or len(values[0]) > len(str(high)):
        return False
    return low <= int(values[0]) <= high


def _unknown_parameter(name: str, allowed: tuple[str, ...]) -> str:
    fixed = " Its order is fixed; sort the results yourself." if name == "ordering" else ""
    return f"This list takes no {name!r} parameter.{fixed} It takes: {', '.join(allowed)}."


class Pagination(KnownParameters, PageNumberPagination):
    """Every list: 50 a page by default, ?page_size= up to 200."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def own_parameters(self) -> tuple[str, ...]:
        return (self.page_query_param, self.page_size_query_param)

    def whole_numbers(self) -> dict[str, tuple[int, int]]:
        return {self.page_query_param: (1, MAX_PAGE), **super().whole_numbers()}


class NewestFirst(KnownParameters, CursorPagination):
    """Runs: newest first, 50 a page (?page_size= up to 200), `next`/`previous` links and no total. A team may
    hold millions of runs: a cursor needs no COUNT(*) over them, and pages stay put while new runs arrive."""

    ordering = ("-created_at", "-pk")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def own_parameters(self) -> tuple[str, ...]:
        return (self.cursor_query_param, self.page_size_query_param)
