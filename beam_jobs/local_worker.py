"""The worker process of a local multi-process run, started by ``runners.LocalRunner``.

Beam's own worker entry point logs its start-up (channels, state cache, options)
at INFO straight to the terminal, a dozen lines a worker and stage, because an
import-time warning of Beam's gives the root logger a stderr handler before the
worker sets anything up. This entry point installs the handler first, with the
same rule as the command line: Beam's modules reach the terminal only from ERROR
up, anything else from WARNING up. Every record still goes to the driver through
Beam's logging service, so ``--verbose`` shows them there.

Kept free of Beam imports at module level: logging must be set before Beam loads.
"""

from __future__ import annotations

import logging
import sys


def beam_is_quiet(record: logging.LogRecord) -> bool:
    """Drop what Beam's modules log below ERROR, whatever logger they use (some log to the root logger on import)."""
    return record.levelno >= logging.ERROR or "apache_beam" not in record.pathname


def main() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.addFilter(beam_is_quiet)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", handlers=[handler], force=True)
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
    main()
