"""MM2's client layer: what replication leaves in a cluster, read back, and each flow's fixed parts.

The MirrorClient API (``mirror_client``: MM2 ``MirrorClient`` / ``RemoteClusterUtils``),
checkpoints and offset syncs read back (``checkpoints``), the source offsets of
``mm2-offsets.<source>.internal`` (``source_offsets``), a flow's context built once at start
(``context``: policy, filters, client factory, the ``client.id`` rule) and the group-offset
translator shared by the checkpoint emitter and the migration tools (``translator``).

Layer rule: may import only :mod:`mirrorspark.kafka`, :mod:`mirrorspark.config`,
:mod:`mirrorspark.mm2` and :mod:`mirrorspark.errors`; never PySpark (like MM2's
``connect-mirror-client`` artifact).
"""
