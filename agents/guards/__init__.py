"""What the strategy stage checks: the record's order against the store, and each draft's money,
ids and topic against the customer's own orders."""

from baton_kafka.agents.guards.audit import audit
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.drift import DRIFT, drift_problems, product_names
from baton_kafka.agents.guards.identifiers import Identifier, identifiers
from baton_kafka.agents.guards.money import Money, money
from baton_kafka.agents.guards.trust import UNTRUSTED, Checked, check

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
