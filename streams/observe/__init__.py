"""Watching a worker: the observer protocol, metrics, logs, the web port and its dashboard."""

__all__: list[str] = []
