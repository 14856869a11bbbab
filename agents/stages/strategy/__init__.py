"""The strategy stage: what the shop does for the message, and the reply that says so.

Its folder holds all of it: the prompt text and its examples (``prompt``), the offline rule
(``rule``), the model's validators (``validators``), the baton update once the reply is out
(``update``), the function (``agent``), what the chain runs (``run``) and the stage as declared
with ``stage()`` (``declared``). Everything else names the stage through ``NAME``, or through
the chain.
"""

NAME = "strategy"

__all__ = ["NAME"]
