"""The Faust adapter: the app, its agents and tables, a run's model and orders, child workers."""

__all__: list[str] = []
