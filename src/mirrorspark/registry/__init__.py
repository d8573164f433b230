"""The Schema Registry adapter: Confluent's REST API (Apicurio's ``/apis/ccompat/v7`` too) as ``SchemaRegistryLike``."""
