"""Multi-region operations on Apache Kafka: replica placement, replica status, leader elections.

Confluent's Multi-Region Clusters operations on Apache Kafka's own APIs (KIP-392 follower fetching,
reassignment with throttles, leader elections), with mirrorspark's remote topics as the asynchronous
copies ("observers"). Internal: the ``mirrorspark`` command is the public face.
"""
