"""``mirrorspark run`` starts Spark before it imports the replication runtime (issue #44): its JVM starts meanwhile.

In a fresh Python (what ``mirrorspark run`` is), with the clusters' check stubbed and Spark's start recorded
instead of run: no broker, no Spark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = """
import json, sys
import mirrorspark.cli.app as app

seen = {}

class Recorded(Exception):
    pass

class SparkStart:
    def __init__(self, master, conf, *, task_slots):
        seen.update(runtime_imported="mirrorspark.replication.driver" in sys.modules, task_slots=task_slots)
        raise Recorded

app._SparkStart = SparkStart
app.check_reachable = lambda *args, **kwargs: None
try:
    app.app(["run", sys.argv[1], "--quiet"], standalone_mode=False)
except Recorded:
    pass
print(json.dumps(seen))
"""


def test_spark_starts_before_the_replication_runtime_is_imported_sized_by_the_config(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters=A, B\nA.bootstrap.servers=localhost:1\nB.bootstrap.servers=localhost:2\n"
        "A->B.enabled=true\nA->B.tasks.max=3\nB->A.enabled=true\nB->A.tasks.max=2\n"
        "B->A.verify.sampling.enable=true\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(props)], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {"runtime_imported": False, "task_slots": 3 + 2 + 1}  # tasks.max each, one for sampling
