"""The ``baton`` command: one module per subcommand, one error style."""

__all__: list[str] = []
