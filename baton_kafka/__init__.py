"""baton's one import name; its subpackages are ``schemas``, ``agents`` and ``streams``."""
