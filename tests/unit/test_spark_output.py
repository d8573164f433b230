"""Where the Spark driver JVM's output goes (:mod:`mirrorspark.spark_session.jvm_output`): a file with -v, a tail."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mirrorspark.spark_session import jvm_output

pytestmark = pytest.mark.unit


def test_spark_output_goes_to_a_file_only_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(jvm_output.SPARK_LOG_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    logger = logging.getLogger("mirrorspark")
    before = logger.level
    try:
        logger.setLevel(logging.WARNING)
        assert jvm_output.spark_log_path() is None  # no -v: nowhere
        logger.setLevel(logging.INFO)  # -v
        path = jvm_output.spark_log_path()
    finally:
        logger.setLevel(before)
    assert path is not None and path.parent == tmp_path / "mirrorspark" and path.suffix == ".log"
    monkeypatch.setenv(jvm_output.SPARK_LOG_ENV, str(tmp_path / "spark.log"))
    assert jvm_output.spark_log_path() == tmp_path / "spark.log"
    monkeypatch.setenv(jvm_output.SPARK_LOG_ENV, "off")
    assert jvm_output.spark_log_path() is None


@pytest.mark.parametrize("to_file", [True, False])
def test_a_childs_stdout_and_stderr_reach_the_file_and_the_tail_not_the_terminal(tmp_path: Path, to_file: bool) -> None:
    path = tmp_path / "logs" / "spark.log" if to_file else None
    out = jvm_output.JvmOutput(path, tail_lines=2)
    code = "import sys; print('one'); print('two', file=sys.stderr); print('three', flush=True)"
    child = subprocess.run(
        [sys.executable, "-c", code], stdout=out.write_fd, stderr=out.write_fd, capture_output=False, check=True
    )
    assert child.returncode == 0
    out.start().wait(5.0)
    assert len(out.tail) == 2 and "three" in out.tail
    if path is not None:
        assert set(path.read_text().split()) == {"one", "two", "three"}


def test_a_dead_jvms_error_names_its_last_line_and_the_log_file(tmp_path: Path) -> None:
    from mirrorspark.spark_session import popen_probe

    path = tmp_path / "spark.log"
    out = jvm_output.JvmOutput(path)
    code = (
        "import sys; print('starting'); print('java.lang.OutOfMemoryError: Java heap space', file=sys.stderr); "
        "print('Setting default log level to \"WARN\".', file=sys.stderr)"  # every start's banner: never named
    )
    proc = subprocess.Popen([sys.executable, "-c", code + "; sys.exit(3)"], stdout=out.write_fd, stderr=out.write_fd)
    out.start()
    proc.wait(10)
    what = popen_probe(proc, out)()
    assert what is not None and "exited with status 3" in what
    assert "its last output: 'java.lang.OutOfMemoryError: Java heap space'" in what and str(path) in what
    assert jvm_output.JvmOutput(None).start().last_words() == ""  # nothing printed, no file: nothing said


def test_a_jvm_that_does_not_start_is_one_error_naming_its_last_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark.java_gateway
    from pyspark.errors import PySparkRuntimeError

    from mirrorspark.errors import SparkDriverLostError

    seen: dict[str, object] = {}

    def launch_gateway(conf: object, popen_kwargs: dict[str, object]) -> None:
        seen.update(popen_kwargs, conf=dict(conf.getAll()))  # type: ignore[attr-defined]
        code = "import sys; print('spark-class: line 71: /nope/bin/java: No such file or directory', file=sys.stderr)"
        kwargs = {k: popen_kwargs[k] for k in ("stdout", "stderr", "start_new_session")}
        subprocess.run([sys.executable, "-c", code], check=True, **kwargs)  # type: ignore[call-overload]
        raise PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv(jvm_output.SPARK_LOG_ENV, "off")
    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", launch_gateway)
    # as in a fresh process: a SparkContext an earlier test of this worker started keeps its gateway
    monkeypatch.setattr(pyspark.SparkContext, "_gateway", None)
    with pytest.raises(SparkDriverLostError, match="did not start") as e:
        jvm_output.launch_gateway_quietly({"spark.master": "local[2]"})
    assert "/nope/bin/java: No such file or directory" in str(e.value) and "JAVA_HOME" in str(e.value)
    assert seen["conf"] == {"spark.master": "local[2]"} and seen["start_new_session"] is True
