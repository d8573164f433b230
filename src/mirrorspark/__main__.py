"""``python -m mirrorspark`` = the ``mirrorspark`` command."""

from mirrorspark.cli.app import main

main()
