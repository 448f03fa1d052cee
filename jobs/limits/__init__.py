"""Disk-spec catalog evaluation: a disk's published limits for its size, stripe set, instance and block size.

Pure: no Django import (the `disk_limits` command and the models are the edges). The figures live in
`disk_catalog.yaml` beside this module, one record per (type, effective period), each with its source;
`catalog.py` reads and checks them, `spec.py` checks what a person gives, `evaluation.py` computes a disk's
limits from a `Spec` (the steps are in its docstring and in docs/architecture.md, "Disk limits").
"""

from jobs.limits.breakdown import breakdown, crossover_text
from jobs.limits.catalog import CATALOG_PATH, FUNCTIONS, THROUGHPUT_UNITS, USER_FIELDS
from jobs.limits.catalog import _catalog as _catalog
from jobs.limits.catalog import _record as _record
from jobs.limits.efficiency import Efficiency, promised_iops
from jobs.limits.evaluation import CatalogRecord, DiskType, Limits, disk_types, evaluate, typed_unit
from jobs.limits.formulas import converted_text, duration_text, formula_lines, number, rate, rate_text
from jobs.limits.measured import (
    beside,
    in_unit,
    limit_unit,
    promised_throughput,
    throughput_efficiency,
    throughput_efficiency_text,
)
from jobs.limits.spec import Spec, SpecError

__all__ = [
    "CATALOG_PATH",
    "FUNCTIONS",
    "THROUGHPUT_UNITS",
    "USER_FIELDS",
    "CatalogRecord",
    "DiskType",
    "Efficiency",
    "Limits",
    "Spec",
    "SpecError",
    "beside",
    "breakdown",
    "converted_text",
    "crossover_text",
    "disk_types",
    "duration_text",
    "evaluate",
    "formula_lines",
    "in_unit",
    "limit_unit",
    "number",
    "promised_iops",
    "promised_throughput",
    "rate",
    "rate_text",
    "throughput_efficiency",
    "throughput_efficiency_text",
    "typed_unit",
]
