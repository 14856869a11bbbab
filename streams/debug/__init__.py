"""Debugging tools behind ``baton trace``, ``baton replay`` and ``baton dlq``."""

__all__: list[str] = []
