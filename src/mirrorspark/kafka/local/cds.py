"""AppCDS (class-data sharing) archive for faster JVM start-up."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from mirrorspark.kafka.jars import jar_dir, jars_base_dir
from mirrorspark.kafka.local.settings import CDS_DUMP_FILE, CDS_QUIET, CDS_TARGET_FILE

# --------------------------------------------------------------------------------------------
# AppCDS archive (class-data sharing) for faster JVM start-up
# --------------------------------------------------------------------------------------------


class Cds:
    """A dynamic AppCDS archive of the Kafka class path, shared by every broker JVM."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self._dumper_chosen = False

    @classmethod
    def for_kafka(cls, java: str) -> Cds | None:
        """Return the archive handle, or ``None`` if CDS is off or the cache is not writable."""
        if os.environ.get("MIRRORSPARK_KAFKA_CDS", "1").strip().lower() in {"0", "false", "no", "off"}:
            return None
        override = os.environ.get("MIRRORSPARK_CDS_DIR", "").strip()
        cache = Path(override).expanduser() if override else jars_base_dir().parent / "cds"
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        if not os.access(cache, os.W_OK):
            return None
        digest = hashlib.sha256()
        java_path = Path(java).resolve()
        st = java_path.stat()
        digest.update(f"{java_path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        for jar in sorted(jar_dir("kafka").glob("*.jar")):
            st = jar.stat()
            digest.update(f"{jar.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        return cls(cache / f"kafka-{digest.hexdigest()[:16]}.jsa")

    def use_flags(self) -> tuple[str, ...]:
        """Return the JVM flags that map the archive, or ``()`` if it does not exist yet."""
        if self.archive.is_file() and self.archive.stat().st_size > 0:
            return (f"-XX:SharedArchiveFile={self.archive}", *CDS_QUIET)
        return ()

    def dump_flags(self, node_dir: Path) -> tuple[str, ...]:
        """Return the JVM flags making one JVM (the first asked) dump an archive into ``node_dir`` at exit."""
        if self._dumper_chosen:
            return ()
        self._dumper_chosen = True
        try:
            (node_dir / CDS_TARGET_FILE).write_text(str(self.archive))
        except OSError:
            return ()
        return (f"-XX:ArchiveClassesAtExit={node_dir / CDS_DUMP_FILE}", *CDS_QUIET)

    @staticmethod
    def collect_dump(node_dir: Path, *, keep: bool) -> None:
        """Promote the archive a stopped JVM dumped into the cache (if it exited cleanly)."""
        dump, target_note = node_dir / CDS_DUMP_FILE, node_dir / CDS_TARGET_FILE
        try:
            if keep and dump.is_file() and dump.stat().st_size > 0 and target_note.is_file():
                target = Path(target_note.read_text().strip())
                if not target.exists():
                    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
                    os.close(fd)
                    try:
                        shutil.copyfile(dump, tmp)
                        os.replace(tmp, target)
                    finally:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dump.unlink(missing_ok=True)
                target_note.unlink(missing_ok=True)
