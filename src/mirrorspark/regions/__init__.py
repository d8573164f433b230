"""Multi-region operations on Apache Kafka: replica placement, replica status, leader elections.

The operator side of Confluent's Multi-Region Clusters document, built on Apache Kafka's own
APIs (KIP-392 follower fetching, explicit replica assignment, reassignment with throttles,
preferred and unclean leader election), with mirrorspark's remote topics as the asynchronous
copies ("observers") that Apache Kafka itself lacks: ``placement_tool`` (plan, apply with a
throttle, status, finish) and ``replica_status`` (``mirrorspark replica-status``, ``elect``).
Internal: the ``mirrorspark`` command is the public face. Beside ``migration`` and ``service``
(``pyproject.toml``'s import-linter contracts).
"""
