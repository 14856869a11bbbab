"""The state file of a batched run: each batch's id and what it asked, so a stopped run resumes.

Written atomically after each batch is created (a kill leaves the old file or the new one);
it holds ticket ids, stages and request digests, never a prompt or an answer.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

JOURNAL_VERSION = 1


class BatchFailed(RuntimeError):
    """A batch could not be created, polled or read; the journal keeps what was sent."""


class JournalMismatch(BatchFailed):
    """The journal file belongs to another run (other tickets or settings)."""


def digest(value: Any) -> str:
    """A short, stable digest of a JSON value (a request body, a run's inputs)."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20]


@dataclass(frozen=True)
class Saved:
    """One batch as the journal holds it: its id and custom_id -> (ticket, stage, digest)."""

    id: str
    requests: dict[str, tuple[str, str, str]]


@dataclass
class BatchJournal:
    """The batches of one run, in the order they were sent, saved after each one is created."""

    path: Path
    run: str
    batches: list[Saved] = field(default_factory=list)

    @classmethod
    def open(cls, path: Path, run: str) -> BatchJournal:
        """The journal at ``path`` (a new one if there is none); ``JournalMismatch`` if it was
        written for another run."""
        try:
            data = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return cls(path, run)
        except (OSError, orjson.JSONDecodeError) as exc:
            raise BatchFailed(f"cannot read the batch state {path}: {exc}") from None
        if not isinstance(data, dict) or data.get("version") != JOURNAL_VERSION:
            raise BatchFailed(f"{path} is not a batch state file of this version")
        if data.get("run") != run:
            raise JournalMismatch(
                f"{path} holds the batches of another run (other tickets or settings); "
                "remove it or pass another --batch-state"
            )
        batches = [
            Saved(b["id"], {k: (v[0], v[1], v[2]) for k, v in b["requests"].items()})
            for b in data.get("batches", [])
        ]
        return cls(path, run, batches)

    def add(self, saved: Saved) -> None:
        """Record a created batch and write the file (atomically: a kill leaves old or new)."""
        self.batches.append(saved)
        doc = {
            "version": JOURNAL_VERSION,
            "run": self.run,
            "batches": [
                {"id": b.id, "requests": {k: list(v) for k, v in b.requests.items()}}
                for b in self.batches
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        os.replace(tmp, self.path)

    def remove(self) -> None:
        """The run is finished: forget its batches (a new run sends new ones)."""
        self.path.unlink(missing_ok=True)
