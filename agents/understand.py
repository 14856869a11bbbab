"""The understand stage's function, where it was first published (its folder is
``stages.understand``)."""

from baton_kafka.agents.stages.understand.agent import (
    CORE_PROBLEM_CHARS,
    OWN_WORDS_CHARS,
    in_own_words,
    understand,
)
from baton_kafka.agents.stages.understand.validators import GROUNDED, grounded_in

__all__ = [
    "CORE_PROBLEM_CHARS",
    "GROUNDED",
    "OWN_WORDS_CHARS",
    "grounded_in",
    "in_own_words",
    "understand",
]
