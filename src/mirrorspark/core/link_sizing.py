"""Source consumer settings for a long link: fetches sized to the bandwidth-delay product (#43, no I/O).

librdkafka keeps one fetch request in flight per broker connection, so one connection carries at most one fetch
response per round trip: at 100 ms RTT a 4 MiB partition fetch caps a partition at ~40 MB/s, and the fetch
response at ``fetch.max.bytes`` caps the whole connection the same way. A flow that says its link is long
(``replication.link.rtt.ms``) gets fetches that carry the link's bandwidth-delay product per round trip:

1. Nothing changes for a local link (``rtt_ms`` 0): :func:`long_link_fetch_settings` returns no settings.
2. ``max.partition.fetch.bytes`` is the bandwidth-delay product rounded up to a power of two, between
   :data:`MIN_PARTITION_FETCH_BYTES` and :data:`MAX_PARTITION_FETCH_BYTES`: one partition can fill the link.
3. ``fetch.max.bytes`` is four partitions' worth, at most :data:`MAX_FETCH_BYTES`, and never below one partition's;
   ``receive.message.max.bytes`` stays above it (librdkafka refuses a response bound below ``fetch.max.bytes``).
4. The local prefetch queue (``queued.max.messages.kbytes``) holds two responses, so the next fetch is asked for
   while the task produces the previous one.

The socket's receive buffer is left to the kernel's autotuning: setting ``socket.receive.buffer.bytes`` fixes it
at ``net.core.rmem_max`` at most (often 208 KiB) and would cap the link at that window per RTT. docs/running.md,
"Long links", says how to size ``net.ipv4.tcp_rmem`` instead.
"""

from __future__ import annotations

from typing import Final

MIN_PARTITION_FETCH_BYTES: Final = 4 * 1024 * 1024
"""The copy tasks' ``max.partition.fetch.bytes`` on a local link (``task_configs.COPY_CONSUMER_DEFAULTS``)."""

MAX_PARTITION_FETCH_BYTES: Final = 64 * 1024 * 1024
"""Largest partition fetch sized for a link: 64 MiB per round trip is 5 Gb/s at 100 ms."""

MAX_FETCH_BYTES: Final = 96 * 1024 * 1024
"""Largest ``fetch.max.bytes`` sized for a link: below librdkafka's default response bound of 100 MB."""

RECEIVE_MARGIN_BYTES: Final = 1024 * 1024
"""How far ``receive.message.max.bytes`` stays above ``fetch.max.bytes`` (librdkafka wants at least 512 B)."""


def bandwidth_delay_bytes(rtt_ms: int, rate: int) -> int:
    """Bytes in flight on a link of ``rate`` bytes/s and ``rtt_ms`` ms round trip."""
    return rate * rtt_ms // 1000


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def long_link_fetch_settings(rtt_ms: int, rate: int) -> dict[str, int]:
    """Return librdkafka consumer settings for a link of ``rtt_ms`` ms RTT and ``rate`` bytes/s (invariants 1-4).

    Empty for ``rtt_ms`` 0; the caller lets settings the user gave win.
    """
    if rtt_ms <= 0:
        return {}
    bdp = bandwidth_delay_bytes(rtt_ms, rate)
    partition = min(MAX_PARTITION_FETCH_BYTES, max(MIN_PARTITION_FETCH_BYTES, _power_of_two_at_least(bdp)))
    fetch = max(partition, min(MAX_FETCH_BYTES, 4 * partition))
    return {
        "max.partition.fetch.bytes": partition,
        "fetch.max.bytes": fetch,
        "receive.message.max.bytes": fetch + RECEIVE_MARGIN_BYTES,
        "queued.max.messages.kbytes": max(65536, 2 * fetch // 1024),
    }


__all__ = [
    "MAX_FETCH_BYTES",
    "MAX_PARTITION_FETCH_BYTES",
    "MIN_PARTITION_FETCH_BYTES",
    "RECEIVE_MARGIN_BYTES",
    "bandwidth_delay_bytes",
    "long_link_fetch_settings",
]
