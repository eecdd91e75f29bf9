"""``python -m optnet``."""

from optnet.cli import main

main()
