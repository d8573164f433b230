"""The executor side of the data path: one long-running copy task inside a Spark task (MM2 ``MirrorSourceTask``).

``spec`` (what a task gets and returns), ``partition``, ``produce``, ``failures``, ``grant_client``,
``commit`` and ``commit_records`` (at least once or KIP-618 transactions), ``stored_offsets``,
``topic_check``, the copy loop ``runner`` and the Spark entry point ``job``.

Layer rule: nothing here imports the driver side (``connector``, ``worker``, ``driver``).
"""
