"""``python -m optnet``."""

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

# Distributions whose module is named otherwise.
_MODULE_OF = {"pyyaml": "yaml"}


def _missing_dependencies() -> list[str]:
    """The dependencies in the checkout's pyproject.toml that this interpreter cannot
    import (empty when optnet is not run from a checkout)."""
    project = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not project.is_file():
        return []
    names = [re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower()
             for spec in tomllib.loads(project.read_text())["project"]["dependencies"]]
    return [name for name in names
            if importlib.util.find_spec(_MODULE_OF.get(name, name.replace("-", "_"))) is None]


try:
    from optnet.cli import main
except ModuleNotFoundError as exc:
    # Run from a checkout by an interpreter optnet was never installed into: name every
    # missing package and how to install them, rather than show a traceback.
    package = (exc.name or "optnet").split(".")[0]
    if package == "optnet":
        raise
    missing = _missing_dependencies() or [package]
    names = ", ".join(f"'{name}'" for name in missing)
    print(f"optnet: the package{'s' if len(missing) > 1 else ''} {names} optnet needs "
          f"{'are' if len(missing) > 1 else 'is'} not installed for {sys.executable}; "
          f"install optnet with its dependencies (pip install . in the project folder) and "
          f"run it again.", file=sys.stderr)
    sys.exit(2)

main()
