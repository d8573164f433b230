"""Configuration: MM2's ``mm2.properties`` parsed once, at the edge, into frozen objects.

The key registry (``keys``), Java ``.properties`` syntax (``properties``),
``${env:...}``/``${file:...}`` resolution (``resolve``), value conversion (``values``),
the frozen model (``model``: ``ClientSettings``, ``ClusterConfig``, ``FlowConfig``,
``MirrorConfig``; a cluster's ``SchemaRegistrySettings`` in ``schema_registry``), a flow's internal
topic names (``internal_topics``), the Java-to-librdkafka
translation (``librdkafka``) and the parse of it all (``parse``), in steps: the file's keys sorted by
where they apply (``raw``), checked as written (``key_checks``), client settings composed
(``client_chain``), each cluster's Schema Registry and each flow's schema replication (``schema_sync``),
each flow merged and typed (``flow_merge``); each flow's replication policy
loaded, the identity-cycle check of the enabled flows and the flows a run replicates (``runnable``).

Layer rule: may import only :mod:`mirrorspark.core`, :mod:`mirrorspark.mm2` and :mod:`mirrorspark.errors`.
"""
