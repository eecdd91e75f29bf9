"""Zero-load latency model: per-hop components, all-pairs matrix, diameter, round trip.

The report's latency is the one model every command uses: the per-hop components are
:func:`optnet.model.hop` (whose docstring gives the formula), the sums over routed paths
:mod:`optnet.routing.latency`, so ``optnet route`` prints the diameter the report does.
"""

from __future__ import annotations

from optnet.model import COMPONENTS, Breakdown, hop
from optnet.routing.latency import Diameter, diameter, latency_matrix, path_latency, round_trip

__all__ = ["COMPONENTS", "Breakdown", "Diameter", "diameter", "hop", "latency_matrix",
           "path_latency", "round_trip"]
