"""Progress of long per-file work, logged at intervals so it shows on any runner.

Workers may be threads, subprocesses or remote machines, so progress goes through
``logging`` (the CLI renders it with rich) rather than a bar owned by one process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

LOG = logging.getLogger("clirmatrix")


class ProgressLog:
    """Logs ``label: N records, X% of the file, R records/s`` every ``interval`` seconds (``unit`` names what is counted)."""

    def __init__(self, label: str, total_bytes: int, position: Callable[[], int], interval: float = 10.0, unit: str = "records") -> None:
        self.label = label
        self.unit = unit
        self.total_bytes = max(total_bytes, 1)
        self.position = position
        self.interval = interval
        self.records = 0
        self.started = self._last = time.monotonic()

    def tick(self, n: int = 1) -> None:
        self.records += n
        if self.records & 0x3FF:  # look at the clock every 1,024 records only
            return
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self._log(now)

    def _log(self, now: float) -> None:
        try:
            done = min(self.position() / self.total_bytes, 1.0)
        except (OSError, ValueError):
            done = float("nan")
        rate = self.records / max(now - self.started, 1e-9)
        LOG.info("%s: %s %s, %.0f%% of the file, %s %s/s", self.label, f"{self.records:,}", self.unit, 100 * done, f"{rate:,.0f}", self.unit)

    def finish(self) -> float:
        """Seconds since the start; logs a last line."""
        now = time.monotonic()
        self._log(now)
        return now - self.started
