"""Trainer and evaluation of the CLIRMatrix baselines (docs/models.md), installed with the ``train`` extra.

``clirmatrix train`` and ``clirmatrix evaluate`` are the entry points; the pieces are
``arguments`` (settings), ``data`` (raw text from a build), ``collate`` (tokenization),
``losses/`` (one module per objective), ``modeling/`` (the networks), ``trainer`` (the loop),
``metrics`` (ir-measures) and ``train``/``evaluate`` (the drivers).
"""
