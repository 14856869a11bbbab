"""Faust's ``broker_credentials`` for the ``BATON_KAFKA_*`` settings, as the other clients get."""

from __future__ import annotations

from faust.auth import OAuthCredentials, SASLCredentials, SSLCredentials
from faust.types.auth import CredentialsT

from baton_kafka.streams.kafka.connect import ssl_context
from baton_kafka.streams.settings import Settings


def broker_credentials(settings: Settings) -> CredentialsT | None:
    """The credentials a Faust app connects with; None for PLAINTEXT.

    Faust picks SASL_SSL over SASL_PLAINTEXT by whether ``SASLCredentials`` holds an SSL
    context, and hands that context to aiokafka, so the configured CA is the one trusted.
    """
    sec = settings.kafka
    context = ssl_context(sec)
    if sec.oauth:
        from baton_kafka.streams.kafka.oauth import token_provider

        return OAuthCredentials(oauth_cb=token_provider(sec), ssl_context=context)
    if sec.sasl:
        return SASLCredentials(
            username=sec.username,
            password=sec.password,
            mechanism=sec.mechanism,
            ssl_context=context,
        )
    if context is not None:
        return SSLCredentials(context)
    return None
