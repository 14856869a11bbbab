"""Approved offers carried out: actions on their topic, executors, the ledger, the reconciler."""
