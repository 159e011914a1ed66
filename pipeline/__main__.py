"""``python -m clirmatrix.pipeline`` is the ``clirmatrix`` command."""

import sys

from clirmatrix.pipeline.cli import main

sys.exit(main())
