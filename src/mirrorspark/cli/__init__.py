"""The command line, the top layer: the ``mirrorspark`` command (``app``) and ``make demo`` (``demo``).

Layer rule: may import every other layer; nothing imports it.
"""
