"""``python -m mirrorspark.spark_session``: make the Spark driver JVM's class archive (:mod:`.class_archive`)."""

import sys

from mirrorspark.spark_session.class_archive import main

sys.exit(main())
