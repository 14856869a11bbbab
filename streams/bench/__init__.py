"""``baton bench``: workloads, reference chains, measurements and the report."""

__all__: list[str] = []
