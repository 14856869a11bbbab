"""Reaching Kafka: the embedded broker, the bootstrap probe, baton's topics, a plain client."""

from baton_kafka.streams.kafka.client import Message, publish, read
from baton_kafka.streams.kafka.connect import BrokerUnreachable, bootstrap_servers, probe_broker
from baton_kafka.streams.kafka.embedded import BrokerError, EmbeddedBroker
from baton_kafka.streams.kafka.topics import TopicMismatch, TopicNames, ensure_topics

__all__ = [
    "BrokerError",
    "BrokerUnreachable",
    "EmbeddedBroker",
    "Message",
    "TopicMismatch",
    "TopicNames",
    "bootstrap_servers",
    "ensure_topics",
    "probe_broker",
    "publish",
    "read",
]
