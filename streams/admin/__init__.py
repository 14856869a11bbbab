"""Operations an operator runs against a live deployment (``baton forget``)."""
