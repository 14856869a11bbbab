"""Operations an operator runs against a live deployment (``baton forget``)."""

__all__: list[str] = []
