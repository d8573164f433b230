"""mirrorspark: MirrorMaker 2-compatible cross-cluster replication for Apache Kafka on Apache Spark.

The package's client layer (``policy``, ``filters``, ``records``, ``offsets``,
``config``, ``errors``) imports without PySpark; the data path lives in
``mirrorspark.spark`` and the driver in ``mirrorspark.driver``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
