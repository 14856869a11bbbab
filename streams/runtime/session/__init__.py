"""A session's state: its baton, turn, bursts, budgets, owner and erasure."""

__all__: list[str] = []
