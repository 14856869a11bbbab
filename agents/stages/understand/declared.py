"""The understand stage, declared: the chain's first stage, which opens the session."""

from baton_kafka.agents.declare import stage
from baton_kafka.agents.stages.understand import NAME, prompt
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.agents.stages.understand.run import run
from baton_kafka.agents.stages.understand.update import apply_understanding
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import Understanding

STAGE = stage(
    NAME,
    input=Ticket,
    output=Understanding,
    run=run,
    prompt=prompt.TEXT,
    offline=understand_rules,
    update=apply_understanding,
    carries="understanding",
    role="understood",
    opens_session=True,
)

__all__ = ["STAGE"]
