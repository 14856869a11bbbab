"""The command line's errors: each is one line on stderr and an exit code, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable


class UsageError(Exception):
    """A wrong argument: its message is the line reported, exit code 2."""

    exit_code = 2


class Fail(Exception):
    """A runtime failure: its message is the line reported, exit code 1."""

    exit_code = 1


def reported(command: Callable[[], int]) -> int:
    """Run ``command``: its errors, a bad setting and the broker's errors become one line on
    stderr and exit code 2 or 1, an interrupt exit code 130."""
    from baton_kafka.streams.kafka.connect import BrokerUnreachable
    from baton_kafka.streams.kafka.embedded import BrokerError
    from baton_kafka.streams.kafka.registry import RegistryError
    from baton_kafka.streams.kafka.topics import TopicMismatch
    from baton_kafka.streams.settings import SettingsError

    try:
        return command()
    except (UsageError, Fail) as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    except SettingsError as exc:
        # Every problem of the configuration, one line each.
        for line in exc.lines:
            print(f"baton: {line}", file=sys.stderr)
        return UsageError.exit_code
    except (BrokerUnreachable, BrokerError, TopicMismatch, RegistryError) as exc:
        print(f"baton: {exc}", file=sys.stderr)
        return Fail.exit_code
    except KeyboardInterrupt:
        print("baton: interrupted", file=sys.stderr)
        return 130


def checked_id(value: str, where: str) -> str:
    """``value`` when it is an id baton accepts; else a ``UsageError`` saying why, which never
    repeats the value (it may hold control characters)."""
    from pydantic import TypeAdapter, ValidationError

    from baton_kafka.schemas.records import Identifier

    try:
        return str(TypeAdapter(Identifier).validate_python(value))
    except ValidationError as exc:
        reason = exc.errors(include_url=False)[0]["msg"]
        raise UsageError(f"{where}: {reason}") from None
