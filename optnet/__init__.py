"""optnet: a design compiler for networks of FPGAs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("optnet")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
