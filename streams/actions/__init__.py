"""Approved offers carried out: actions on their topic, executors, the ledger, the reconciler."""

from baton_kafka.streams.actions.executor import (
    Executor,
    ExecutorRefused,
    ExecutorUnavailable,
    Outcome,
)

__all__ = ["Executor", "ExecutorRefused", "ExecutorUnavailable", "Outcome"]
