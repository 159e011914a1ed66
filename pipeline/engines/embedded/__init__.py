"""The embedded BM25 engine: a compact in-memory two-field index scored like Lucene, top-k pruned in numba.

Its parts, each with its own account of what it does (docs/engine.md gives the
argument and the measurements):

- ``codec``: the block codec, FOR-packed blocks of ``BLOCK`` postings, and their decoding;
- ``index``: ``Postings`` (both fields' packed lists, their block and term maxima and
  title signatures), the builder that indexing feeds, ``KernelIndex`` (all of it as
  the kernels take it), and the index stored between the steps of sharded retrieval;
- ``scoring``: the query batch, its clauses and Lucene's clause score and field combination;
- ``heap``: the top ``k``, the result rows and their ranking;
- ``maxscore``: the pruned search (block-max MaxScore, exact);
- ``merged``: queries with few postings, every posting decoded and summed;
- ``exhaustive``: the oracle, every posting scored;
- ``engine``: ``EmbeddedEngine``, which analyses, indexes and searches with them.

Pruned, merged and exhaustive results are equal hit for hit and bit for bit
(tests/test_engine_pruning.py).
"""

from clirmatrix.pipeline.engines.embedded.codec import BLOCK, NO_MORE, Blocks
from clirmatrix.pipeline.engines.embedded.engine import _QUERIES_PER_CALL, EmbeddedEngine, search_kernels
from clirmatrix.pipeline.engines.embedded.exhaustive import Accumulators
from clirmatrix.pipeline.engines.embedded.heap import Results, _key_doc, _key_score, _rank_key, _worse, rank_rows
from clirmatrix.pipeline.engines.embedded.index import FIELDS, FLOOR_K, KernelIndex, Postings
from clirmatrix.pipeline.engines.embedded.maxscore import CURSOR, WINDOW, WINDOW_BLOCKS, Scratch
from clirmatrix.pipeline.engines.embedded.merged import KEEP_BUFFER, MERGE_WINDOW, _keep_best, choose_merged
from clirmatrix.pipeline.engines.embedded.scoring import UP, Clauses, QueryBatch

__all__ = [
    "BLOCK", "CURSOR", "FIELDS", "FLOOR_K", "KEEP_BUFFER", "MERGE_WINDOW", "NO_MORE", "UP", "WINDOW", "WINDOW_BLOCKS", "_QUERIES_PER_CALL",
    "Accumulators", "Blocks", "Clauses", "EmbeddedEngine", "KernelIndex", "Postings", "QueryBatch", "Results", "Scratch",
    "_keep_best", "_key_doc", "_key_score", "_rank_key", "_worse", "choose_merged", "rank_rows", "search_kernels",
]  # fmt: skip
# Settings read at run time (MERGE_DENSITY, _ANALYZE_DOCS, ...) live in their parts alone: set them there (``merged``, ``engine``).
