"""MM2's own client library as a test oracle: what does Kafka's ``connect-mirror-client`` read?

Runs ``mm2java/MirrorClientTool.java`` (Apache Kafka's ``RemoteClusterUtils`` and
``MirrorClient`` from the ``mm2`` jar set) in a short-lived JVM against one cluster and
returns its JSON answer, so integration tests can check that the internal topics mirrorspark
writes (checkpoints, heartbeats, remote topic names) are understood by MM2's Java API the way
failover tooling would use it.

Speed: the tool is compiled once (``javac``) into a small jar under
``<jars base>/../mm2java/<key>/`` (falling back to a temporary directory if that is not
writable), keyed by a hash of the Java source, the ``java`` binary and the ``mm2`` jars, so
later sessions skip compilation. The first call of each command dumps an AppCDS archive
(``-XX:ArchiveClassesAtExit``) next to the jar; later calls map it, which roughly halves the
JVM start-up (``MIRRORSPARK_KAFKA_CDS=0`` turns this off, as for the brokers). Java's
single-file source launcher was measured slower (it compiles on every call).

Every call fails with ``AssertionError`` carrying the command line and the tail of the JVM's
stderr when the tool exits non-zero, prints no JSON, or runs longer than
:data:`MM2_CALL_TIMEOUT_S`. Note: ``translateOffsets`` against a cluster without the
``<alias>.checkpoints.internal`` topic blocks for the consumer's ``default.api.timeout.ms``
(60 s) and then fails; that is MM2's behaviour, not the harness's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mirrorspark.kafka.jars import classpath, jar_dir, jars_base_dir, java_executable

__all__ = ["MM2_CALL_TIMEOUT_S", "mm2_client_info", "mm2_translate_offsets"]

MM2_CALL_TIMEOUT_S: Final = 120.0
"""Wall-clock limit of one tool run (translateOffsets itself waits up to 30 s, or 60 s for a
missing checkpoints topic)."""

_SOURCE: Final = Path(__file__).resolve().parent / "mm2java" / "MirrorClientTool.java"
_MAIN_CLASS: Final = "MirrorClientTool"
_JAR_NAME: Final = "MirrorClientTool.jar"
_STDERR_TAIL_CHARS: Final = 6000
_JVM_FLAGS: Final = (
    "-Xmx256m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
    # JVM unified logging (CDS warnings included) defaults to stdout: send it to stderr.
    "-Xlog:disable",
    "-Xlog:all=warning:stderr",
    # No log4j2 configuration is on the class path: the default one, at ERROR only.
    "-Dlog4j2.level=error",
)


@dataclass(frozen=True)
class _Tool:
    """The compiled tool: how to launch it and where its CDS archives live."""

    java: str
    classpath: str
    directory: Path
    cds: bool


def mm2_translate_offsets(
    bootstrap: str,
    remote_alias: str,
    group: str,
    *,
    policy_class: str | None = None,
    separator: str | None = None,
) -> dict[tuple[str, int], int]:
    """``RemoteClusterUtils.translateOffsets(props, remote_alias, group, 30 s)`` on one cluster.

    Parameters
    ----------
    bootstrap:
        ``bootstrap.servers`` of the cluster holding ``<remote_alias>.checkpoints.internal``
        (normally the target of the flow ``remote_alias->target``).
    remote_alias:
        Alias of the source cluster whose group offsets were checkpointed.
    group:
        The consumer group id.
    policy_class, separator:
        ``replication.policy.class`` and ``replication.policy.separator``; MM2's defaults
        when ``None``.

    Returns
    -------
    dict[tuple[str, int], int]
        ``{(downstream topic, partition): downstream offset}`` of the last checkpoint of
        ``group`` per partition; empty if there is none.

    Raises
    ------
    AssertionError
        If the tool fails (stderr tail in the message) or times out.
    """
    answer = _run("translate", bootstrap, remote_alias, group, *_policy_args(policy_class, separator))
    offsets: dict[tuple[str, int], int] = {}
    for name, offset in answer.items():
        topic, dash, partition = name.rpartition("-")
        if not dash or not topic or not isinstance(offset, int):
            raise AssertionError(f"MirrorClientTool translate: unexpected entry {name!r}: {offset!r}")
        offsets[(topic, int(partition))] = offset
    return offsets


def mm2_client_info(
    bootstrap: str,
    aliases: Sequence[str] = (),
    *,
    policy_class: str | None = None,
    separator: str | None = None,
) -> dict[str, Any]:
    """What ``MirrorClient`` reports about one cluster.

    Parameters
    ----------
    bootstrap:
        ``bootstrap.servers`` of the cluster.
    aliases:
        Cluster aliases to ask ``replicationHops`` for (no commas; empty ones are dropped).
    policy_class, separator:
        ``replication.policy.class`` and ``replication.policy.separator``; MM2's defaults
        when ``None``.

    Returns
    -------
    dict[str, Any]
        ``heartbeatTopics``, ``checkpointTopics``, ``upstreamClusters``, ``remoteTopics``
        (sorted lists of str) and ``replicationHops`` (``{alias: hops}``, ``-1`` when
        unreachable).

    Raises
    ------
    ValueError
        If an alias contains a comma.
    AssertionError
        If the tool fails (stderr tail in the message) or times out.
    """
    bad = [a for a in aliases if "," in a]
    if bad:
        raise ValueError(f"aliases must not contain commas: {bad!r}")
    return _run("info", bootstrap, ",".join(aliases), *_policy_args(policy_class, separator))


# --------------------------------------------------------------------------------------------


def _policy_args(policy_class: str | None, separator: str | None) -> list[str]:
    # Positional: an empty argument means "not given" to the tool.
    if separator is not None:
        if separator == "":
            raise ValueError("separator must not be empty")
        return [policy_class or "", separator]
    return [policy_class] if policy_class else []


def _run(command: str, *args: str) -> dict[str, Any]:
    tool = _tool()
    archive = tool.directory / f"{command}.jsa"
    dump: Path | None = None
    cds_flags: tuple[str, ...] = ()
    if tool.cds:
        if archive.is_file() and archive.stat().st_size > 0:
            cds_flags = (f"-XX:SharedArchiveFile={archive}",)
        else:
            dump = tool.directory / f".{command}.{os.getpid()}.{time.monotonic_ns()}.jsa"
            cds_flags = (f"-XX:ArchiveClassesAtExit={dump}",)
    argv = [tool.java, *_JVM_FLAGS, *cds_flags, "-cp", tool.classpath, _MAIN_CLASS, command, *args]
    try:
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                encoding="utf-8",
                timeout=MM2_CALL_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                # Java decodes its arguments with the locale's charset: keep non-ASCII intact.
                env={**os.environ, "LC_ALL": "C.UTF-8"},
            )
        except subprocess.TimeoutExpired as e:
            raise AssertionError(
                f"MirrorClientTool {command} did not finish within {MM2_CALL_TIMEOUT_S:.0f} s: {argv}\n"
                f"stderr (tail):\n{_tail(e.stderr)}"
            ) from None
        if proc.returncode != 0:
            raise AssertionError(
                f"MirrorClientTool {command} exited with {proc.returncode}: {argv}\n"
                f"stderr (tail):\n{_tail(proc.stderr)}"
            )
        try:
            answer = json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            raise AssertionError(
                f"MirrorClientTool {command} printed no JSON ({e}): {proc.stdout[:2000]!r}\n"
                f"stderr (tail):\n{_tail(proc.stderr)}"
            ) from None
        if not isinstance(answer, dict):
            raise AssertionError(f"MirrorClientTool {command} printed {answer!r}, not a JSON object")
        if dump is not None and dump.is_file() and dump.stat().st_size > 0 and not archive.exists():
            os.replace(dump, archive)  # atomic: concurrent sessions never see half an archive
        return answer
    finally:
        if dump is not None:
            dump.unlink(missing_ok=True)


def _tail(text: str | bytes | None) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return text[-_STDERR_TAIL_CHARS:]


@functools.cache
def _tool() -> _Tool:
    """Compile the tool once per process, or reuse the jar a previous session built."""
    java = java_executable()
    mm2_jars = classpath("mm2")
    directory = _cache_dir(java)
    jar = directory / _JAR_NAME
    if not jar.is_file():
        _compile(java, mm2_jars, directory, jar)
    cds = os.environ.get("MIRRORSPARK_KAFKA_CDS", "1").strip().lower() not in {"0", "false", "no", "off"}
    return _Tool(java=java, classpath=f"{jar}{os.pathsep}{mm2_jars}", directory=directory, cds=cds)


def _cache_dir(java: str) -> Path:
    digest = hashlib.sha256()
    digest.update(_SOURCE.read_bytes())
    java_path = Path(java).resolve()
    st = java_path.stat()
    digest.update(f"\0{java_path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    for path in sorted(jar_dir("mm2").glob("*.jar")):
        st = path.stat()
        digest.update(f"{path.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    key = digest.hexdigest()[:16]
    for base in (
        jars_base_dir().parent / "mm2java",
        Path(tempfile.gettempdir()) / f"mirrorspark-mm2java-{os.getuid()}",
    ):
        try:
            (base / key).mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(base / key, os.W_OK):
            return base / key
    raise AssertionError("no writable directory for the compiled MirrorClientTool")


def _compile(java: str, mm2_jars: str, directory: Path, jar: Path) -> None:
    javac = Path(java).with_name("javac")
    javac_cmd = str(javac) if javac.is_file() else shutil.which("javac")
    if javac_cmd is None:
        raise AssertionError("javac not found next to java or on PATH: a JDK 17+ is needed")
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
        classes = Path(tmp) / "classes"
        argv = [javac_cmd, "-encoding", "UTF-8", "-Xlint:all", "-d", str(classes), "-cp", mm2_jars, str(_SOURCE)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise AssertionError(f"javac failed ({proc.returncode}): {argv}\n{proc.stdout}{proc.stderr}")
        built = Path(tmp) / _JAR_NAME
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(classes.rglob("*.class")):
                zf.write(path, path.relative_to(classes).as_posix())
        if not jar.exists():  # another session may have won; its jar is identical
            for stale in directory.glob("*.jsa"):  # archives of an earlier jar no longer match
                stale.unlink(missing_ok=True)
            os.replace(built, jar)
