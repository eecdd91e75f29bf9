"""The elaborated cluster: every node with its board, every link with its ports and lanes.

Produced by :func:`optnet.elaborate.elaborate` from a :class:`~optnet.spec.models.ClusterDesc`;
every default has been applied, every generated link has ports, and every value is final.
Later stages (routing, planning) read only this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import networkx as nx

from optnet.phys import PHYS
from optnet.spec.models import BoardDesc, ClusterDesc, PortSettings
from optnet.spec.source import Path
from optnet.units import Quantity

__all__ = ["Cluster", "End", "Link", "Node", "graph"]


@dataclass(frozen=True)
class Node:
    """One FPGA.

    Attributes
    ----------
    name : str
    index : int
        Position in :attr:`Cluster.nodes`.
    id : int
        Node id in packet headers.
    board : BoardDesc
    enclosure : str or None
    position : int or None
        FPGA position inside its enclosure (hierarchical) or dragonfly group.
    group : int or None
        Dragonfly group.
    coords : tuple of int
        Mesh, torus or hypercube coordinates.
    ports : Mapping[str, PortSettings]
        Per-port settings from the cluster file.
    origin : Path
        Where the node was declared (``("nodes", i)`` or ``("topology",)``).
    """

    name: str
    index: int
    id: int
    board: BoardDesc
    enclosure: str | None
    position: int | None
    group: int | None
    coords: tuple[int, ...]
    ports: Mapping[str, PortSettings]
    origin: Path


@dataclass(frozen=True)
class End:
    """One end of a link: a node, one of its board's ports and the lanes used."""

    node: str
    port: str
    lanes: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.node}.{self.port}"


@dataclass(frozen=True)
class Link:
    """A full-duplex link.

    Attributes
    ----------
    index : int
    a, b : End
    phy : str
        Key of :data:`optnet.phys.PHYS`.
    lanes : int
    line_rate : Quantity
        Per lane.
    length : Quantity or None
    role : str
        ``explicit`` for links from ``links:``, otherwise the generator's role
        (``torus``, ``global``, ``intra`` ...).
    dim : int or None
        Mesh/torus/hypercube dimension.
    origin : Path
        Where the link was declared.
    """

    index: int
    a: End
    b: End
    phy: str
    lanes: int
    line_rate: Quantity
    length: Quantity | None
    role: str
    dim: int | None
    origin: Path

    def setting_paths(self, key: str) -> tuple[Path, ...]:
        """Where setting ``key`` (``phy``, ``lanes``, ``line_rate``, ``length``) of this link
        may be written, in the order elaboration layers them: the link itself (explicit
        links), the topology's link settings (generated links), ``defaults.link``. The first
        of these the file has is where a finding about the setting belongs."""
        if self.role == "explicit":
            paths: tuple[Path, ...] = ((*self.origin, key),)
        else:
            paths = (("topology", "global_link", key),) if self.role == "global" else ()
            paths += (("topology", "link", key),)
        return (*paths, ("defaults", "link", key))

    @property
    def bandwidth(self) -> Fraction:
        """Payload-capable bit/s in each direction after line encoding."""
        return self.lanes * self.line_rate.value * PHYS[self.phy].efficiency

    def __str__(self) -> str:
        return f"{self.a} -- {self.b}"


@dataclass(frozen=True)
class Cluster:
    """An elaborated cluster."""

    desc: ClusterDesc
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    topology: str | None
    generated: bool
    """True when a generator built the whole network and nothing explicit changed it."""
    diameter_hint: int | None
    """Hop diameter in closed form when ``generated`` and the shape has one."""
    _by_name: dict[str, Node] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {n.name: n for n in self.nodes})

    @property
    def name(self) -> str:
        return self.desc.name

    def node(self, name: str) -> Node:
        """The node called ``name``."""
        return self._by_name[name]


def graph(cluster: Cluster) -> nx.MultiGraph:
    """The cluster as an undirected multigraph; edge keys are link indices."""
    g = nx.MultiGraph()
    g.add_nodes_from(n.name for n in cluster.nodes)
    g.add_edges_from((link.a.node, link.b.node, link.index) for link in cluster.links)
    return g
