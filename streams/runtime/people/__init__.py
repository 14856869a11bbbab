"""A person's decisions and the escalations that wait for one."""

__all__: list[str] = []
