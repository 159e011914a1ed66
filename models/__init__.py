"""Trainer and evaluation of the CLIRMatrix baselines (installed with the ``train`` extra).

The models themselves arrive with issue 6; this package only reserves the name
``clirmatrix.models`` so nothing generic is ever installed as ``models``.
"""
