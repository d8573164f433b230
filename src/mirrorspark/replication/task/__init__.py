"""The executor side of the data path: one long-running copy task inside a Spark task (MM2 ``MirrorSourceTask``).

What the driver hands a task and what it hands back (``spec``: plain, picklable values), a
partition's copy state (``partition``), producing one record's copy (``produce``), the task's
failures as mirrorspark errors (``failures``), the task's end of the driver's grant server
(``grant_client``), the two ways a task commits (``commit``: at least once, or in transactions,
KIP-618; the records a commit writes and their checked sending in ``commit_records``; an
exactly-once task's checks of its source topics' ids in ``topic_check``), the copy loop
(``runner``: :class:`~mirrorspark.replication.task.runner.CopyTaskRunner`, its Kafka clients and
grant link injected) and the Spark job's entry point that builds them (``job``).

Layer rule: nothing here imports the driver side (``connector``, ``worker``, ``driver``); it runs in a
Python worker with nothing but its :class:`~mirrorspark.replication.task.spec.CopyTaskSpec`.
"""
