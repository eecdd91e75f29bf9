"""Per-node routing tables and their canonical JSON form (the ``$readmemh`` hex files and
the C header are rendered from it by :mod:`optnet.emit.tables`).

Unicast table, one entry per destination node id ``0 .. 2**id_bits - 1``::

    bit  [port_bits-1 : 0]                     output port (0 = local port)
    bit  [port_bits+vc_bits-1 : port_bits]     output VC
    bit  [port_bits+vc_bits]                   valid
    (entry width = port_bits + vc_bits + 1; unused ids are 0, i.e. not valid)

Multicast table, one entry per source node id (multicast group = broadcast from that
source)::

    bit  [ports-1 : 0]                         port mask: bit 0 = deliver locally,
                                               bit p = forward on port p
    bit  [ports + (p+1)*vc_bits - 1 : ports + p*vc_bits]   VC on port p

Widths: ``id_bits = clog2(largest node id + 1)``, ``port_bits = clog2(ports)`` where
``ports`` counts the local port and the node's links, ``vc_bits = clog2(vcs)``; each at
least 1. Hex files hold one entry per line, zero-padded to whole hex digits.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from optnet.routing.arrays import chunks, transpose, walk
from optnet.routing.route import Routed

__all__ = ["NodeTable", "Widths", "clog2", "node_tables", "to_json"]

TABLE_FORMAT = 1


def clog2(value: int) -> int:
    """Bits needed to number ``value`` things (at least 1)."""
    return max(1, (value - 1).bit_length())


@dataclass(frozen=True)
class Widths:
    """Field widths of a node's tables."""

    id_bits: int
    port_bits: int
    vc_bits: int
    ports: int

    @property
    def entry_bits(self) -> int:
        return self.port_bits + self.vc_bits + 1


@dataclass(frozen=True)
class Entry:
    """Unicast entry: where a packet for ``dst`` leaves this node."""

    dst: str
    dst_id: int
    port: int
    vc: int
    hops: int


@dataclass(frozen=True)
class Group:
    """Multicast entry: ports a broadcast from ``source`` leaves this node on, and the VC
    it takes on each (``vcs[p]``, 0 where the mask bit is clear)."""

    source: str
    source_id: int
    mask: int
    vcs: tuple[int, ...]

    def word(self, widths: Widths) -> int:
        """The entry packed as in the hex file."""
        packed = sum(v << (p * widths.vc_bits) for p, v in enumerate(self.vcs))
        return packed << widths.ports | self.mask


@dataclass(frozen=True)
class NodeTable:
    """Everything a node's router needs to route, as compact arrays indexed by node index
    (``names[i]``, ``ids[i]``); :attr:`unicast` and :attr:`multicast` give entry views."""

    node: str
    node_id: int
    algorithm: str
    widths: Widths
    ports: tuple[str, ...]
    names: tuple[str, ...]
    ids: tuple[int, ...]
    port: array
    vc: array
    hops: array
    mask: tuple[int, ...]
    mvcs: tuple[int, ...]
    multipath: tuple[tuple[str, tuple[str, ...]], ...]
    _rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False, compare=False)
    """``ids``, ``mask`` and ``mvcs`` as integer arrays, where :func:`node_tables` had them
    (the words of 8,192 tables are 67 million entries: not one Python int at a time)."""

    @property
    def unicast(self) -> tuple[Entry, ...]:
        """One entry per destination, in id order."""
        order = sorted(range(len(self.names)), key=self.ids.__getitem__)
        return tuple(Entry(self.names[i], self.ids[i], self.port[i], self.vc[i], self.hops[i])
                     for i in order)

    @property
    def multicast(self) -> tuple[Group, ...]:
        """One port mask per source (multicast group), in node order."""
        bits, ports = self.widths.vc_bits, self.widths.ports
        return tuple(Group(self.names[i], self.ids[i], m,
                           tuple(self.mvcs[i] >> (p * bits) & ((1 << bits) - 1)
                                 for p in range(ports)))
                     for i, m in enumerate(self.mask))

    def word(self, entry: Entry) -> int:
        """The unicast entry packed as in the hex file."""
        w = self.widths
        return (1 << (w.port_bits + w.vc_bits)) | (entry.vc << w.port_bits) | entry.port

    def unicast_words(self) -> list[int]:
        """The unicast table as memory words, indexed by destination id (0 = not valid)."""
        # :meth:`word` of every entry, from the arrays: every node builds its tables for the
        # hardware, and a million Entry objects took seconds at 1,024 nodes
        w = self.widths
        words = np.zeros(1 << w.id_bits, dtype=np.int64)
        ids = self._rows[0] if self._rows is not None else list(self.ids)
        words[ids] = ((1 << (w.port_bits + w.vc_bits))
                      | np.frombuffer(self.vc, dtype=np.uint8).astype(np.int64) << w.port_bits
                      | np.frombuffer(self.port, dtype=np.uint16))
        return words.tolist()

    def multicast_words(self) -> list[int]:
        """The multicast table as memory words, indexed by group (source) id."""
        # Group.word of every group: the packed VCs of the node's ports above the mask
        w = self.widths
        vcs = (1 << (w.ports * w.vc_bits)) - 1
        if w.ports * (1 + w.vc_bits) < 63:  # the words fit in int64
            ids, mask, mvcs = self._rows or (list(self.ids), np.array(self.mask, np.int64),
                                             np.array(self.mvcs, np.int64))
            words = np.zeros(1 << w.id_bits, dtype=np.int64)
            words[ids] = (mvcs & vcs) << w.ports | mask
            return words.tolist()
        words = [0] * (1 << w.id_bits)
        for i, (mask, packed) in enumerate(zip(self.mask, self.mvcs, strict=True)):
            words[self.ids[i]] = (packed & vcs) << w.ports | mask
        return words


def node_tables(routed: Routed) -> list[NodeTable]:
    """The tables of every node, in node order."""
    net, routing = routed.net, routed.routing
    nodes = routed.cluster.nodes
    n = net.size
    top = routed.cluster.desc.network.vcs - 1
    names = tuple(node.name for node in nodes)
    ids = tuple(node.id for node in nodes)
    id_bits = clog2(max(ids) + 1)
    out_port = np.array(net.out_port, dtype=np.int64)
    dst = np.array(net.dst, dtype=np.int64)
    # Destination by row as routed, node by row in the tables: built a block of
    # destinations at a time, then transposed.
    port = np.zeros((n, n), dtype=np.uint16)
    vc = np.zeros((n, n), dtype=np.uint8)
    hops = np.zeros((n, n), dtype=np.uint16)
    for start, stop in chunks(n, n):
        nxt, cls = routing.matrices(start, stop)
        hop = nxt >= 0
        h = (routing.walked[0][start:stop] if routing.walked is not None
             else walk(dst, nxt, np.arange(start, stop))[0])
        port[start:stop] = np.where(hop, out_port[np.maximum(nxt, 0)], 0)
        vc[start:stop] = np.where(hop, np.minimum(cls, top), 0)
        hops[start:stop] = np.where(hop, h, 0)
    port, vc, hops = transpose(port), transpose(vc), transpose(hops)
    detours: dict[int, list] = {}
    for (s, d), via in sorted(routing.multipath.items()):
        detours.setdefault(s, []).append((names[d], tuple(names[m] for m in via)))
    vc_bits = clog2(top + 1)
    mvcs = _multicast_vcs(net, routed, top, vc_bits)
    by_node = transpose(routed.broadcast.arrays()[0])
    exact = by_node.dtype != object and mvcs.dtype != object
    id_row = np.array(ids, dtype=np.int64)
    tables = []
    for x in range(n):
        widths = Widths(id_bits, clog2(len(net.ports[x])), vc_bits, len(net.ports[x]))
        multipath = tuple(detours.get(x, ()))
        rows = (id_row, by_node[x], mvcs[x]) if exact else None
        tables.append(NodeTable(names[x], ids[x], routing.algorithm, widths, net.ports[x],
                                names, ids, array("H", port[x].tobytes()),
                                array("B", vc[x].tobytes()), array("H", hops[x].tobytes()),
                                tuple(by_node[x].tolist()), tuple(mvcs[x].tolist()),
                                multipath, rows))
    return tables


_PACK_BITS = 52
"""Bits of multicast VCs summed at once: a float64's exact integers."""


def _multicast_vcs(net, routed: Routed, top: int, vc_bits: int) -> np.ndarray:
    """Per node (row), per source: the VC of every port a broadcast from the source leaves
    the node on, packed ``vc_bits`` per port (int64, or Python ints past 63 bits)."""
    n, channels = net.size, len(net.src)
    if not routed.broadcast.classes:
        return np.zeros((n, n), dtype=np.int64)
    masks, classes = routed.broadcast.arrays()
    src = np.array(net.src, dtype=np.int64)
    port = np.array(net.out_port, dtype=np.int64)
    # Ports in groups whose VCs fit in a float64's exact integers, summed by a weighted
    # count; the groups joined as Python ints only when a node has that many ports.
    group = max(1, _PACK_BITS // vc_bits)
    groups = max(map(len, net.ports), default=1) // group + 1
    packed = [np.zeros((n, n), dtype=np.int64) for _ in range(groups)]  # source by row
    into = routed.broadcast.into
    for start, stop in chunks(n, n if into is not None else channels):
        if into is not None:
            # trees: the channel into each node is the one broadcast channel to look at
            c = into[start:stop].astype(np.int64)
            on = c >= 0
            c = np.maximum(c, 0)
            row = np.arange(stop - start)[:, None]
            rows = (row * n + src[c]).reshape(-1)
            vcs = np.where(on, np.minimum(classes[start:stop][row, c], top), 0).astype(np.int64)
        else:
            block = masks[start:stop]
            c = np.broadcast_to(np.arange(channels), (stop - start, channels))
            on = (block[:, src] >> port & 1).astype(bool)
            vcs = np.where(on, np.minimum(classes[start:stop], top), 0).astype(np.int64)
            rows = np.repeat(np.arange(stop - start), channels) * n + np.tile(src, stop - start)
        port_c = port[c]
        for g in range(groups):
            mine = port_c // group == g
            value = (vcs << (port_c % group) * vc_bits) * mine
            packed[g][start:stop] = np.bincount(rows, weights=value.reshape(-1),
                                                minlength=(stop - start) * n).reshape(-1, n)
    total = transpose(packed[0])
    if groups > 1:
        total = total.astype(object)
        for g in range(1, groups):
            total += transpose(packed[g]).astype(object) << g * group * vc_bits
    return total


def to_json(table: NodeTable) -> dict:
    """The canonical form of a node's tables (what the hex and header are made from)."""
    w = table.widths
    return {
        "format": "optnet-routes",
        "version": TABLE_FORMAT,
        "node": table.node,
        "node_id": table.node_id,
        "algorithm": table.algorithm,
        "widths": {"id_bits": w.id_bits, "port_bits": w.port_bits, "vc_bits": w.vc_bits,
                   "entry_bits": w.entry_bits, "ports": w.ports},
        "ports": [{"port": i, "name": name} for i, name in enumerate(table.ports)],
        "unicast": [{"dst": e.dst, "dst_id": e.dst_id, "port": e.port, "vc": e.vc,
                     "hops": e.hops} for e in table.unicast],
        "multicast": [{"source": g.source, "source_id": g.source_id, "mask": g.mask,
                       "ports": [p for p in range(w.ports) if g.mask >> p & 1],
                       "vcs": [g.vcs[p] for p in range(w.ports) if g.mask >> p & 1]}
                      for g in table.multicast],
        "multipath": [{"dst": dst, "via": list(via)} for dst, via in table.multipath],
    }
