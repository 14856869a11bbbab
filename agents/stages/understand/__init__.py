"""The understand stage: what the customer means, read from the message and the session.

Its folder holds all of it: the prompt text (``prompt``), the offline rule (``rule``), the
model's validators (``validators``), the baton update (``update``), the function (``agent``),
what the chain runs (``run``) and the stage as declared with ``stage()`` (``declared``).
Everything else names the stage through ``NAME``, or through the chain.
"""

NAME = "understand"

__all__ = ["NAME"]
