r"""Print librdkafka's CONFIGURATION.md property table of the librdkafka bundled with confluent-kafka.

Regenerate ``src/mirrorspark/config/keys/data/librdkafka-<version>.txt`` after upgrading confluent-kafka::

    .venv/bin/python tools/config_names/librdkafka_names.py > /tmp/CONFIGURATION.md
    awk -F'|' '/^[a-z][a-z0-9._]* *\\|/{gsub(/ /,"",$1); print $1}' /tmp/CONFIGURATION.md | sort -u

(then add the two header comment lines). ``rd_kafka_conf_properties_show`` is the function librdkafka's own
build uses to write CONFIGURATION.md.
"""

import ctypes
import glob
import os
import sys

import confluent_kafka

libs = os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs")
lib = ctypes.CDLL(glob.glob(os.path.join(libs, "librdkafka-*.so*"))[0])
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
libc.fflush.argtypes = [ctypes.c_void_p]
lib.rd_kafka_conf_properties_show.argtypes = [ctypes.c_void_p]
sys.stdout.flush()
out = libc.fdopen(os.dup(sys.stdout.fileno()), b"w")
lib.rd_kafka_conf_properties_show(out)
libc.fflush(out)
