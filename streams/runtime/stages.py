"""A stage as the runtime reads it (declared in ``agents.stage``), and the built-in chain's
stages in order (``STAGES``, from ``streams.runtime.chain``)."""

from baton_kafka.agents.stage import FIRST_SOURCE, REPLIES, Inputs, Stage, name_problem
from baton_kafka.streams.runtime.chain import STAGES

__all__ = ["FIRST_SOURCE", "REPLIES", "STAGES", "Inputs", "Stage", "name_problem"]
