"""The shop's service policy: declared as data in a file, rendered for the model, enforced."""

from baton_kafka.agents.policy.load import DEFAULT_FILE, PolicyError, load, parse
from baton_kafka.agents.policy.load import default as default_policy
from baton_kafka.agents.policy.model import ORIGINAL_PAYMENT, Policy, Remedy

__all__ = [
    "DEFAULT_FILE",
    "ORIGINAL_PAYMENT",
    "Policy",
    "PolicyError",
    "Remedy",
    "default_policy",
    "load",
    "parse",
]
