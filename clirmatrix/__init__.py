"""clirmatrix: rebuild CLIRMatrix-style cross-lingual retrieval datasets, and read them.

The names a user calls from Python live here, so that they stay put when the folders
behind them move (``pipeline/``, ``beam_jobs/`` are internal)::

    from clirmatrix import QuerySplit, documents
    split = QuerySplit("out/", "bi139-base", "en", "de", "test1")
    for query in split.queries(): ...      # Query(src_id, src_query)
    for qrel in split.qrels(): ...         # Qrel(src_id, doc_id, label)
    for query, results in split.records(): ...   # both from one read
    for batch in split.iter_batches(): ...       # SplitBatch(queries, qrels) of pyarrow RecordBatches

    from clirmatrix import irds            # ir_datasets (pip install 'clirmatrix[irds]')
    irds.register("out/")

    from clirmatrix import BuildConfig, run_build, validate
    run_build(BuildConfig(dumps="dumps/", out="out/"))
    assert validate("out/").ok

Each name is imported on first use: ``import clirmatrix`` loads neither Beam nor pyarrow.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from clirmatrix.beam_jobs.build import BuildResult, run_build
    from clirmatrix.pipeline.config import BuildConfig
    from clirmatrix.pipeline.errors import InputError
    from clirmatrix.pipeline.tools.loader import Qrel, Query, QuerySplit, SplitBatch, documents
    from clirmatrix.pipeline.tools.sample import write_sample_dumps
    from clirmatrix.pipeline.tools.validate import ValidationReport, validate

try:
    __version__ = version("clirmatrix")
except PackageNotFoundError:  # pragma: no cover - run from a checkout that was never installed
    __version__ = "0+unknown"

# public name -> the module that defines it (the one place an internal move is followed)
_WHERE = {
    "QuerySplit": "clirmatrix.pipeline.tools.loader",
    "Query": "clirmatrix.pipeline.tools.loader",
    "Qrel": "clirmatrix.pipeline.tools.loader",
    "SplitBatch": "clirmatrix.pipeline.tools.loader",
    "documents": "clirmatrix.pipeline.tools.loader",
    "validate": "clirmatrix.pipeline.tools.validate",
    "ValidationReport": "clirmatrix.pipeline.tools.validate",
    "BuildConfig": "clirmatrix.pipeline.config",
    "run_build": "clirmatrix.beam_jobs.build",
    "BuildResult": "clirmatrix.beam_jobs.build",
    "write_sample_dumps": "clirmatrix.pipeline.tools.sample",
    "InputError": "clirmatrix.pipeline.errors",
}

__all__ = [
    "BuildConfig", "BuildResult", "InputError", "Qrel", "Query", "QuerySplit", "SplitBatch", "ValidationReport",
    "__version__", "documents", "irds", "run_build", "validate", "write_sample_dumps",
]


def __getattr__(name: str) -> object:
    """Import a public name on first use (PEP 562); ``irds`` is the submodule ``clirmatrix.irds``."""
    if name in _WHERE:
        value = getattr(_quiet_import(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'clirmatrix' has no attribute {name!r}")


def _quiet_import(module: str) -> object:
    """Import ``module`` without Beam's import-time warnings reaching the user's terminal.

    Beam logs to the root logger while it loads (optional cloud clients missing), and
    ``logging.warning`` on a root logger with no handler gives it one: the warning
    prints, and the user's own ``logging.basicConfig`` later does nothing. Such
    records of Beam's are dropped and the handler it added is taken away again.
    """
    import logging

    from clirmatrix.beam_jobs.local_worker import beam_is_quiet  # imports no Beam

    root = logging.getLogger()
    before = list(root.handlers)
    root.addFilter(beam_is_quiet)
    try:
        return import_module(module)
    finally:
        root.removeFilter(beam_is_quiet)
        if not before:
            for handler in [h for h in root.handlers if h not in before]:
                root.removeHandler(handler)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
