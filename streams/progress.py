"""A one-line progress bar on stderr that is drawn on a terminal only: a log file gets none."""

from __future__ import annotations

import sys
from typing import IO

from tqdm import tqdm


class Progress:
    """Counts ``done`` of ``total`` under ``label``; drawn (by tqdm) only when ``stream`` is a
    terminal and ``total`` reaches ``min_total``, so nothing like ``\\r`` reaches a file or pipe.
    """

    def __init__(
        self, total: int, label: str, stream: IO[str] | None = None, min_total: int = 200
    ) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.done = 0
        # disable=None: tqdm draws only on a terminal (it asks the stream).
        self._bar = tqdm(
            total=total,
            desc=label,
            file=self.stream,
            disable=None if total >= min_total else True,
            ascii="-#",
            bar_format="{desc} [{bar:30}] {n_fmt}/{total_fmt}",
            dynamic_ncols=False,
            leave=True,
        )

    @property
    def enabled(self) -> bool:
        """Whether the bar is drawn (a terminal, and a run long enough)."""
        return not self._bar.disable

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more; the bar ends its line once all are done."""
        self.show(self.done + n)

    def show(self, done: int) -> None:
        """Count ``done`` in all."""
        if done == self.done:
            return
        self._bar.update(done - self.done)
        self.done = done
        if done >= self.total:
            self.close()

    def close(self) -> None:
        """End the bar's line, complete or not."""
        self._bar.close()
