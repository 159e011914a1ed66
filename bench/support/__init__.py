"""What the tests and the benches share; not part of clirmatrix, not in the wheel.

- ``support.toy``: a tiny learnable release and a tiny BERT (and all-MiniLM-L6-v2 fetched once), for the training tests and benches;
- ``support.lucene_jar``: Lucene itself (a JDK 21+ and the Anserini fat jar) running the harnesses in ``java/``, for the engine's checks;
- ``support.dumps_site``: a small copy of dumps.wikimedia.org on 127.0.0.1 (real servers' listings, faults, throttling), for the fetch tests and ``fuzz_commands.py``;
- ``support.local_http``: the quiet handler and 127.0.0.1 server every local HTTP site of the tests starts from.

Imported as ``support.toy`` and so on: bench/ is on ``sys.path`` for a script run
as ``python bench/x.py`` (its own folder) and for the tests (``pythonpath`` in pyproject.toml's pytest settings).
"""
