"""The built-in stages, one folder each: its prompt text, offline rule, validators and function."""

__all__: list[str] = []
