"""How a ticket is answered: the reply, redelivered copies, hand-offs, clocks, the index."""

__all__: list[str] = []
