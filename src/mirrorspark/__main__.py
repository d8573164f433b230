"""``python -m mirrorspark`` = the ``mirrorspark`` command."""

from mirrorspark.cli import main

main()
