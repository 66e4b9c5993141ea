"""Allows ``python -m axe`` where the ``axe`` script is not on PATH."""

from axe.cli import main

main()
