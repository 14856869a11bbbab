"""What the strategy stage checks: the record's order against the store, and each draft's money,
ids and topic against the customer's own orders."""

from agents.guards.audit import CustomerOrders, audit
from agents.guards.drift import DRIFT, drift_problems, product_names
from agents.guards.identifiers import Identifier, identifiers
from agents.guards.money import Money, money
from agents.guards.trust import UNTRUSTED, Checked, check

__all__ = [
    "DRIFT",
    "UNTRUSTED",
    "Checked",
    "CustomerOrders",
    "Identifier",
    "Money",
    "audit",
    "check",
    "drift_problems",
    "identifiers",
    "money",
    "product_names",
]
