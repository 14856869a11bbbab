"""The look-up stage, declared: it reads the understanding and finds the order."""

from baton_kafka.agents.declare import stage
from baton_kafka.agents.stages.lookup import NAME, prompt
from baton_kafka.agents.stages.lookup.rule import choose_rules
from baton_kafka.agents.stages.lookup.run import run
from baton_kafka.agents.stages.lookup.update import apply_match
from baton_kafka.schemas.stages import OrderMatch, Understanding

STAGE = stage(
    NAME,
    input=Understanding,
    output=OrderMatch,
    run=run,
    prompt=prompt.TEXT,
    offline=choose_rules,
    update=apply_match,
    carries="match",
    role="matched",
)

__all__ = ["STAGE"]
