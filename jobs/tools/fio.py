"""fio: a profile becomes a job file and a command line; fio's output becomes the canonical summary (pure).

The parsers read JSON from fio 2.x and 3.x (one document, the cumulative stream --status-interval writes,
or fio --client's "client_stats"), the normal text report (also when pasted with its newlines collapsed into
spaces, or from fio --client), terse lines of versions 2 to 5, and a lone summary line quoted from a report
(fio_excerpt.py). Each has a *_results function giving one result per group and client, and a parse_* one
giving the one result that stands for the output. docs/reference/fio-output.md is the specification; the modules cite
its sections by anchor (#json-output, #text-report, ...).

This module is the one to import; the work is done in
- fio_job.py: the job file and command line (build_fio_job);
- fio_fill.py: the preconditioning fill before the measured job, and telling its entries apart in the output;
- fio_json.py: JSON output (parse_fio_json, fio_json_documents, latency_bins);
- fio_text.py: the normal text report (parse_fio_text, fio_text_results);
- fio_terse.py: terse lines (parse_fio_terse, fio_terse_results);
- fio_excerpt.py: summary-line excerpts (parse_fio_excerpt);
- fio_common.py: what they share (rw modes, directions, errno messages).
"""

from jobs.tools.fio_common import DIRECTIONS, MIXED_MODES, READ_ONLY_MODES, RW_MODES, WRITE_ONLY_MODES
from jobs.tools.fio_excerpt import parse_fio_excerpt
from jobs.tools.fio_job import FioJob, build_fio_job
from jobs.tools.fio_json import (
    DIRECTION_KEYS,
    MIN_SAMPLE_MS,
    fio_json_results,
    latency_bins,
    parse_fio_json,
)
from jobs.tools.fio_json_documents import fio_json_documents
from jobs.tools.fio_terse import fio_terse_results, parse_fio_terse
from jobs.tools.fio_text import fio_text_results, parse_fio_text

__all__ = [
    "DIRECTIONS",
    "DIRECTION_KEYS",
    "MIN_SAMPLE_MS",
    "MIXED_MODES",
    "READ_ONLY_MODES",
    "RW_MODES",
    "WRITE_ONLY_MODES",
    "FioJob",
    "build_fio_job",
    "fio_json_documents",
    "fio_json_results",
    "fio_terse_results",
    "fio_text_results",
    "latency_bins",
    "parse_fio_excerpt",
    "parse_fio_json",
    "parse_fio_terse",
    "parse_fio_text",
]
