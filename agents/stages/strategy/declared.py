"""The strategy stage, declared: the chain's last stage, which answers."""

from baton_kafka.agents.declare import stage
from baton_kafka.agents.instructions import STAGE_TEXTS
from baton_kafka.agents.stages.strategy import NAME
from baton_kafka.agents.stages.strategy.rule import strategy_rules
from baton_kafka.agents.stages.strategy.run import run
from baton_kafka.schemas.stages import OrderMatch, StrategyDraft

STAGE = stage(
    NAME,
    input=OrderMatch,
    output=StrategyDraft,
    run=run,
    # Its prompt text with the default languages' examples (a shop's: ``stage_text``).
    prompt=STAGE_TEXTS[NAME],
    offline=strategy_rules,
    answers=True,
)

__all__ = ["STAGE"]
