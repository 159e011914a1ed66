"""``python -m clirmatrix.cli`` is the ``clirmatrix`` command."""

import sys

from clirmatrix.cli import main

sys.exit(main())
