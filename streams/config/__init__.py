"""baton's configuration: declared once (``declared``), read from files and the environment
(``sources``, ``loading``), documented (``reference``)."""
