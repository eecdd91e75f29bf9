"""Flit and packet-header layouts shared by every component of the generated network.

A packet is a head flit followed by zero or more body flits; the last flit has ``tail`` set
(a one-flit packet has both ``head`` and ``tail``). The head flit carries only the header,
in the low bits of ``data``; payload travels in body flits, so a packet of ``n`` payload
words is ``n + 1`` flits. Keeping the payload out of the head flit lets every component
find the header at a fixed place and keeps the AXI4-Stream side a plain word stream.

The ``vc`` field is the virtual channel the flit travels on over the *next* link; routers
rewrite it from their tables, link layers carry it and pick the receiving buffer with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from optnet.routing.tables import clog2

__all__ = ["KIND_CREDIT", "KIND_DATA", "FlitFormat", "clog2"]

#: Header ``kind`` of a packet that carries user data.
KIND_DATA = 0
#: Header ``kind`` of a managed endpoint's end-to-end credit return (``arg`` = credits).
KIND_CREDIT = 1


@dataclass(frozen=True)
class FlitFormat:
    """Widths that define the flit and header layouts of one cluster.

    Every node of a cluster uses the same format, so a flit means the same thing on
    both ends of every link.

    Attributes
    ----------
    width : int
        Flit data bits (the cluster's ``network.flit``).
    vcs : int
        Virtual channels per link (VC classes x priority levels).
    id_bits : int
        Bits of a node id.
    ep_bits : int
        Bits of an endpoint index within a node.
    prio_bits : int
        Bits of the priority class (0 = lowest).
    arg_bits : int
        Bits of the header's free argument (credit count, user id).
    """

    width: int
    vcs: int
    id_bits: int
    ep_bits: int = 1
    prio_bits: int = 1
    arg_bits: int = 16

    @property
    def vc_bits(self) -> int:
        return clog2(self.vcs)

    @property
    def flit(self) -> data.StructLayout:
        """Layout of a flit on a router or link port."""
        return data.StructLayout({"data": self.width, "head": 1, "tail": 1,
                                  "vc": self.vc_bits})

    @property
    def header(self) -> data.StructLayout:
        """Layout of the header in the low bits of a head flit's ``data``.

        ``dst`` is the destination node id, or for a multicast (``mcast`` = 1) the
        group, which is the id of the source node. ``kind`` is :data:`KIND_DATA` or
        :data:`KIND_CREDIT`.
        """
        return data.StructLayout({
            "dst": self.id_bits, "src": self.id_bits, "mcast": 1,
            "dst_ep": self.ep_bits, "src_ep": self.ep_bits, "kind": 1,
            "prio": self.prio_bits, "arg": self.arg_bits,
        })

    @property
    def header_bits(self) -> int:
        # The sum of the fields, without building the layout: a plan checks it per router.
        return 2 * self.id_bits + 1 + 2 * self.ep_bits + 1 + self.prio_bits + self.arg_bits

    def pack_header(self, *, dst: int, src: int, mcast: int = 0, dst_ep: int = 0,
                    src_ep: int = 0, kind: int = KIND_DATA, prio: int = 0,
                    arg: int = 0) -> int:
        """The header as an integer, for reference models and test benches."""
        fields = {"dst": dst, "src": src, "mcast": mcast, "dst_ep": dst_ep, "src_ep": src_ep,
                  "kind": kind, "prio": prio, "arg": arg}
        word = 0
        for name, field in self.header:
            value = fields[name]
            if not 0 <= value < 1 << field.width:
                raise ValueError(f"header field {name}={value} does not fit {field.width} bits")
            word |= value << field.offset
        return word

    def unpack_header(self, word: int) -> dict[str, int]:
        """Inverse of :meth:`pack_header`."""
        return {name: word >> f.offset & ((1 << f.width) - 1) for name, f in self.header}

    def pack_flit(self, *, data: int, head: int, tail: int, vc: int) -> int:
        layout = self.flit
        return (data << layout["data"].offset | head << layout["head"].offset
                | tail << layout["tail"].offset | vc << layout["vc"].offset)

    def unpack_flit(self, word: int) -> dict[str, int]:
        return {name: word >> f.offset & ((1 << f.width) - 1) for name, f in self.flit}
