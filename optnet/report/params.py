"""The parameters of the report's models: those of the one model every command uses
(:mod:`optnet.model`), named here for the report's readers.

Every figure a model uses comes from the PHY table (:data:`optnet.phys.PHYS`, cited per
protocol), the cluster's network settings, optnet's own hardware (cycles of its router, link
layer and hub), and the cluster file's ``model:`` mapping, which replaces any of them
(:class:`optnet.spec.models.ModelDesc`).
"""

from __future__ import annotations

from optnet.model import (
    HUB_CYCLES,
    LINK_LAYER_CYCLES,
    LinkParams,
    ModelParams,
    model_params,
)

__all__ = ["HUB_CYCLES", "LINK_LAYER_CYCLES", "LinkParams", "ModelParams", "model_params"]
