"""What goes out and how: the sink, dead letters, delivery, signing and placement."""

__all__: list[str] = []
