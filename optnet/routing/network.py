"""The cluster as routing sees it: nodes by index, directed channels, numbered ports.

Every full-duplex link gives two channels: channel ``2*i`` runs from ``link.a`` to
``link.b``, channel ``2*i + 1`` back. On every node, port 0 is the local (inject/eject)
port and ports 1..P are the node's links in link order; the same numbering appears in the
tables and, later, in the generated router.
"""

from __future__ import annotations

from dataclasses import dataclass

from optnet.cluster import Cluster, Link
from optnet.model import hop_times, model_params

__all__ = ["LOCAL", "Network"]

LOCAL = 0
"""Port number of the local port on every node."""


@dataclass(frozen=True)
class Network:
    """Directed view of a cluster.

    Attributes
    ----------
    cluster : Cluster
    src, dst : tuple of int
        Node indices at the two ends of each channel.
    out_port : tuple of int
        Port number of each channel on its source node.
    out : tuple of tuple of int
        Channels leaving each node, in port order.
    into : tuple of tuple of int
        Channels arriving at each node.
    ports : tuple of tuple of str
        Per node, port number -> board port name of the link end, with its lane range when
        the link uses only part of the port (``local`` for port 0).
    """

    cluster: Cluster
    src: tuple[int, ...]
    dst: tuple[int, ...]
    out_port: tuple[int, ...]
    out: tuple[tuple[int, ...], ...]
    into: tuple[tuple[int, ...], ...]
    ports: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, cluster: Cluster) -> Network:
        """Number the channels and ports of ``cluster``."""
        index = {n.name: n.index for n in cluster.nodes}
        n = len(cluster.nodes)
        src, dst, out_port = [], [], []
        out: list[list[int]] = [[] for _ in range(n)]
        into: list[list[int]] = [[] for _ in range(n)]
        ports: list[list[str]] = [["local"] for _ in range(n)]
        port_of: dict[tuple[int, int], int] = {}
        for link in cluster.links:
            for end in (link.a, link.b):
                node = index[end.node]
                port_of[(link.index, node)] = len(ports[node])
                whole = len(cluster.node(end.node).board.ports[end.port].lanes)
                ports[node].append(end.port + ("" if len(end.lanes) == whole
                                               else _lanes(end.lanes)))
        for link in cluster.links:
            a, b = index[link.a.node], index[link.b.node]
            for s, d in ((a, b), (b, a)):
                channel = len(src)
                src.append(s)
                dst.append(d)
                out_port.append(port_of[(link.index, s)])
                out[s].append(channel)
                into[d].append(channel)
        return cls(cluster, tuple(src), tuple(dst), tuple(out_port),
                   tuple(tuple(c) for c in out), tuple(tuple(c) for c in into),
                   tuple(tuple(p) for p in ports))

    @property
    def size(self) -> int:
        return len(self.out)

    def latency_ps(self) -> list[int]:
        """Zero-load latency of every channel's hop in whole picoseconds, by the model the
        report and ``optnet route`` print (:func:`optnet.model.hop`): integer weights for
        least-latency path search."""
        times = hop_times(model_params(self.cluster), self.cluster.links)
        return [int(times[self.link(c).index][0] * 10**12) for c in range(len(self.src))]

    def link(self, channel: int) -> Link:
        """The link a channel belongs to."""
        return self.cluster.links[channel // 2]

    def name(self, channel: int) -> str:
        """``n0.sfp0 -> n1.sfp0`` for a channel."""
        link = self.link(channel)
        a, b = (link.a, link.b) if channel % 2 == 0 else (link.b, link.a)
        return f"{a} -> {b}"


def _lanes(lanes: tuple[int, ...]) -> str:
    # Two links may share a connector (different lanes); the lane range tells them apart.
    return f"[{lanes[0]}]" if len(lanes) == 1 else f"[{lanes[0]}..{lanes[-1]}]"
