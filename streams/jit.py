"""The compilers an Apache Kafka JVM that baton starts may run, by name.

Kept apart from ``streams.kafka`` so that the command line can offer the choice without
importing the Kafka client at start.
"""

from __future__ import annotations

# "tiered" is the JVM's default: hot methods are compiled quickly, then again by the
# optimising compiler, which a broker under sustained load repays (about a third more tickets
# a second in the benchmark's cpu workload) but which goes on compiling for minutes after a
# start. "c1", the quick compiler alone, stops compiling within seconds: a broker that mostly
# waits (development, tests, a lone ticket at a time) spends a third of the CPU instead.
JIT_FLAGS: dict[str, tuple[str, ...]] = {
    "tiered": (),
    "c1": ("-XX:TieredStopAtLevel=1",),
}
DEFAULT_JIT = "tiered"


def jit_flags(jit: str) -> list[str]:
    """The JVM flags of compiler choice ``jit`` (a key of ``JIT_FLAGS``); ValueError if unknown."""
    if jit not in JIT_FLAGS:
        raise ValueError(f"unknown JIT choice {jit!r}; known: {', '.join(JIT_FLAGS)}")
    return list(JIT_FLAGS[jit])
