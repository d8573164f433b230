"""The Schema Registry adapter: Confluent's REST API (Apicurio's ``/apis/ccompat/v7`` too) as ``SchemaRegistryLike``."""

from mirrorspark.registry.client import CLIENT_DEFAULTS, RegistryClient

__all__ = ["CLIENT_DEFAULTS", "RegistryClient"]
