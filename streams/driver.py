"""The chain in memory for a shop's own tests: ``TestPipeline``, at home in ``streams.testing``."""

from __future__ import annotations

from baton_kafka.streams.testing import TestPipeline

__all__ = ["TestPipeline"]
