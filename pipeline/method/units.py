"""How a build's work is cut into units by default: documents per shard, queries per block and per search unit.

Every unit is sized so that no unit holds a whole large language (docs/scale.md);
the units themselves and a language's plan are contracts between the layers
(``clirmatrix.schemas.contracts``).
"""

from __future__ import annotations

# Defaults of how work is cut (docs/scale.md has the measurements behind them).
DEFAULT_SHARD_DOCS = 500_000  # documents per retrieval shard: ~1 GB per unit while its index is built
DEFAULT_BLOCK_SIZE = 100_000  # queries per block: ~10 M labelled rows in a label or propagation unit
# Queries one search unit of a sharded language runs against its shard: ~4 core-minutes at the
# measured ~220 us a query and shard, so English (7.2 M titles) is 8 units a shard, not one of ~26 minutes.
DEFAULT_SEARCH_UNIT_QUERIES = 1_000_000
