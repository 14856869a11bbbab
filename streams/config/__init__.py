"""baton's configuration: declared once (``declared``), read from files and the environment
(``sources``, ``loading``), documented (``reference``); imported as ``streams.settings``."""

__all__: list[str] = []
