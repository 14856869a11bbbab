"""Operations run against a live deployment (``baton forget``, a person's decisions)."""

__all__: list[str] = []
