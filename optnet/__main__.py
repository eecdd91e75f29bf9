"""``python -m optnet``."""

import sys

try:
    from optnet.cli import main
except ModuleNotFoundError as exc:
    # Run from a checkout by an interpreter optnet was never installed into: say what is
    # missing and how to install it, rather than show a traceback.
    package = (exc.name or "optnet").split(".")[0]
    if package == "optnet":
        raise
    print(f"optnet: the package '{package}' optnet needs is not installed for "
          f"{sys.executable}; install optnet with its dependencies (pip install . in the "
          f"project folder) and run it again.", file=sys.stderr)
    sys.exit(2)

main()
