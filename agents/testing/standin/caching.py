"""The stand-in's prompt cache and token counts, following the Messages API's rules."""

from __future__ import annotations

import hashlib
import threading

from baton_kafka.agents.models.prices import min_cacheable_tokens
from baton_kafka.agents.models.tokens import estimate_prefix_tokens, estimate_tokens
from baton_kafka.agents.testing.standin.messages import Request


class PromptCache:
    """Which system prompt prefixes are cached, and what each call reads, writes and pays for."""

    def __init__(self, min_cache_tokens: int | None = 0) -> None:
        # The real API caches nothing below a model-specific minimum (1024 to 4096 tokens).
        self.min_cache_tokens = min_cache_tokens
        # Calls are answered on the server's loop while tests clear it from another thread.
        self._lock = threading.Lock()
        self._cached: set[str] = set()

    def clear(self) -> None:
        """Forget every cached prefix."""
        with self._lock:
            self._cached.clear()

    def _minimum(self, model: str) -> int:
        if self.min_cache_tokens is None:
            return min_cacheable_tokens(model)
        return max(self.min_cache_tokens, 1)

    def usage(self, request: Request, output: str, output_tokens: int | None) -> dict[str, int]:
        """The API's ``usage`` of answering ``request`` with ``output``, caching as it goes."""
        breaks = request.cache_breaks
        # One reading of the system prompt for its whole and for every cached prefix of it.
        *marked, system = estimate_prefix_tokens(request.system, (*breaks, len(request.system)))
        rest = estimate_tokens(request.text)
        minimum = self._minimum(request.model)
        prefixes = []
        for end, tokens in zip(breaks, marked, strict=True):
            if tokens >= minimum:
                key = hashlib.sha256(f"{request.model}\0{request.system[:end]}".encode())
                prefixes.append((key.hexdigest(), tokens))
        read = write = 0
        if prefixes:
            with self._lock:
                read = max((n for key, n in prefixes if key in self._cached), default=0)
                self._cached.update(key for key, _ in prefixes)
            write = prefixes[-1][1] - read
        return {
            "input_tokens": max(0, system - read - write) + rest,
            "output_tokens": output_tokens or max(1, estimate_tokens(output)),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }
