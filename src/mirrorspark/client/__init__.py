"""MM2's client layer: what replication leaves in a cluster, read back, and each flow's fixed parts.

The MirrorClient API (``mirror_client``: MM2 ``MirrorClient`` / ``RemoteClusterUtils``),
checkpoints and offset syncs read back (``checkpoint_reader``), the source offsets of
``mm2-offsets.<source>.internal`` (``source_offset_reader``), the gap ledger (``gap_reader``),
lifetime totals (``totals_reader``), the flows' status (``status``: ``mirrorspark status``),
partition states and remote copies (``partition_states``), the control topic's lists
(``control_store``: ``mirrorspark control``), a group's failover offsets (``failover``), a flow's
context built once at start (``context``: policy, filters, client factory, the ``client.id`` rule,
admin wrappers) and the group-offset translator shared by the checkpoint emitter and the
migration tools (``translator``).

Never PySpark (like MM2's ``connect-mirror-client`` artifact); its place in the layers:
``pyproject.toml``'s import-linter contracts.
"""
