"""fio: a profile becomes a job file and a command line; fio's output becomes the canonical summary (pure).

The parsers read JSON from fio 2.x and 3.x (one document, or the cumulative stream --status-interval
writes), the normal text report (also when pasted with its newlines collapsed into spaces) and terse v3
lines. /work/shared/docs/fio-reference.md is the specification; section numbers in the modules refer to it.

This module is the one to import; the work is done in
- fio_job.py: the job file and command line (build_fio_job);
- fio_json.py: JSON output (parse_fio_json, fio_json_documents, latency_bins);
- fio_text.py: the normal text report and terse v3 lines (parse_fio_text, parse_fio_terse);
- fio_common.py: what they share (rw modes, directions, errno messages).
"""

from jobs.tools.fio_common import DIRECTIONS, MIXED_MODES, READ_ONLY_MODES, RW_MODES, WRITE_ONLY_MODES
from jobs.tools.fio_job import FioJob, build_fio_job
from jobs.tools.fio_json import DIRECTION_KEYS, MIN_SAMPLE_MS, fio_json_documents, latency_bins, parse_fio_json
from jobs.tools.fio_text import parse_fio_terse, parse_fio_text

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
    "latency_bins",
    "parse_fio_json",
    "parse_fio_terse",
    "parse_fio_text",
]
