"""Read a build or a download with ir_datasets, under ids of its own (``pip install 'clirmatrix[irds]'``).

    import ir_datasets
    from clirmatrix import irds
    irds.register("out/", prefix="clirmatrix-local")
    ir_datasets.load("clirmatrix-local/de/bi139-base/en/test1")   # {prefix}/{doc_lang}/{set}/{query_lang}/{split}

Ids: ``{prefix}/{doc_lang}`` (a language's ``DOCS`` corpus) and
``{prefix}/{doc_lang}/{set}/{query_lang}/{split}`` (that corpus with the queries and qrels
of one direction and split); ``registered_ids`` lists them without registering.
"""

from __future__ import annotations

from clirmatrix.pipeline.tools.irds import DEFAULT_PREFIX, OFFICIAL_NAMESPACE, DocsNotDownloadedError, register, registered_ids

__all__ = ["DEFAULT_PREFIX", "OFFICIAL_NAMESPACE", "DocsNotDownloadedError", "register", "registered_ids"]
