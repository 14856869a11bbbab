"""Kafka record headers (a list of ``(str, bytes)``) as an OpenTelemetry text-map carrier."""

from __future__ import annotations

from opentelemetry.propagators.textmap import Getter, Setter

Headers = list[tuple[str, bytes]]


class HeaderGetter(Getter[Headers]):
    """Reads a header's values as text; a value that is not ASCII is no context and is skipped."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        values = []
        for name, raw in carrier:
            if name.lower() != key or raw is None:
                continue
            try:
                values.append(bytes(raw).decode("ascii"))
            except UnicodeDecodeError:
                continue
        return values or None

    def keys(self, carrier: Headers) -> list[str]:
        return [name for name, _ in carrier]


class HeaderSetter(Setter[Headers]):
    """Sets a header, replacing any earlier value of the same name."""

    def set(self, carrier: Headers, key: str, value: str) -> None:
        carrier[:] = [(k, v) for k, v in carrier if k.lower() != key]
        carrier.append((key, value.encode("ascii")))


GETTER = HeaderGetter()
SETTER = HeaderSetter()
