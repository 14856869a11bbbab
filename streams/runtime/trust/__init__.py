"""What a record must be to be taken in: the checks, in order, and the view they share."""

__all__: list[str] = []
