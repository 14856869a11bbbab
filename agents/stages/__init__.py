"""The built-in stages, one folder each: its prompt text, offline rule, validators, baton
update, function and its declaration with ``stage()`` (``<name>.declared.STAGE``), as a shop's
stage is declared. ``ORDER`` is their names in the chain's order, for the parts of baton that
cannot import the chain (``streams.runtime.chain.STAGES``, which a test holds it to)."""

from baton_kafka.agents.stages import lookup, strategy, understand

ORDER: tuple[str, ...] = (understand.NAME, lookup.NAME, strategy.NAME)

__all__ = ["ORDER"]
