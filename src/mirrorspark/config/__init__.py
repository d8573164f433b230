"""Configuration: MM2's ``mm2.properties`` parsed once, at the edge, into frozen objects.

The key registry (``keys``), Java ``.properties`` syntax (``properties``),
``${env:...}``/``${file:...}`` resolution (``resolve``), value conversion (``values``),
the frozen model (``model``: ``ClientSettings``, ``ClusterConfig``, ``FlowConfig``,
``MirrorConfig``), the Java-to-librdkafka translation (``librdkafka``) and the
merge of it all (``parse``).

Layer rule: may import only :mod:`mirrorspark.mm2` and :mod:`mirrorspark.errors`.
"""
