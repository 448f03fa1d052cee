from __future__ import annotations

from rest_framework.pagination import CursorPagination, PageNumberPagination


class Pagination(PageNumberPagination):
    """Every list: 50 a page by default, ?page_size= up to 200."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class NewestFirst(CursorPagination):
    """Runs: newest first, 50 a page (?page_size= up to 200), `next`/`previous` links and no total. A team may
    hold millions of runs: a cursor needs no COUNT(*) over them, and pages stay put while new runs arrive."""

    ordering = ("-created_at", "-pk")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
