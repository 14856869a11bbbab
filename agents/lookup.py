"""The look-up stage's function, where it was first published (its folder is ``stages.lookup``)."""

from baton_kafka.agents.stages.lookup.agent import (
    CLEAR_MARGIN,
    MODEL_CANDIDATES,
    PRODUCT_MIN,
    every_product,
    look_up,
    rank,
    status_fit,
)
from baton_kafka.agents.stages.lookup.validators import among, as_stored

__all__ = [
    "CLEAR_MARGIN",
    "MODEL_CANDIDATES",
    "PRODUCT_MIN",
    "among",
    "as_stored",
    "every_product",
    "look_up",
    "rank",
    "status_fit",
]
