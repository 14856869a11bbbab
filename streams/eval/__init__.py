"""``baton eval``: a labelled set through the real pipeline, scored for amnesia and accuracy."""

__all__: list[str] = []
