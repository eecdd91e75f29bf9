"""Bandwidth model: link efficiency against packet size and multipath bandwidth (whether an
endpoint's credits keep a path busy is :class:`optnet.model.CreditCheck`, which lint's W101
uses too).

A link's *payload rate* is its line rate times lanes times the line code's efficiency
(8b/10b, 64b/66b, 64b/67b), capped by the IP's user interface
(:attr:`~optnet.report.params.LinkParams.payload_rate`). Of that, a packet's framing,
header and CRC take their share: the *efficiency* of a packet of ``p`` payload bits with
``h`` bits of overhead is ``p / (p + h)`` of the payload rate, and its *channel overhead*
is the share of line bits that are not payload, ``1 - encoding * p / (p + h)``, which tends
to the line code's overhead for large packets (PlasticNet+'s 20 % for 8b/10b).
"""

from __future__ import annotations

from fractions import Fraction

from optnet.cluster import Link
from optnet.report.params import LinkParams, ModelParams

__all__ = ["channel_overhead", "effective_rate", "multipath_rate", "optnet_packet",
           "packet_efficiency"]


def packet_efficiency(payload_bits: int, overhead_bits: Fraction) -> Fraction:
    """Share of the payload rate a packet's payload gets: ``p / (p + h)``."""
    return Fraction(payload_bits, payload_bits + overhead_bits)


def effective_rate(link: LinkParams, payload_bits: int, overhead_bits: Fraction) -> Fraction:
    """Payload bit/s of ``link`` for packets of ``payload_bits`` with ``overhead_bits`` of
    header, framing and CRC each, back to back."""
    return link.payload_rate * packet_efficiency(payload_bits, overhead_bits)


def channel_overhead(link: LinkParams, payload_bits: int,
                     overhead_bits: Fraction) -> Fraction:
    """Share of the line's bits that are not payload (line code, user-interface limit and
    per-packet overhead together)."""
    return 1 - effective_rate(link, payload_bits, overhead_bits) / (link.lanes * link.line_rate)


def optnet_packet(params: ModelParams, link: Link, beats: int,
                  beat_bits: int) -> tuple[int, Fraction]:
    """Payload and overhead bits of an optnet packet of ``beats`` user beats of ``beat_bits``
    streaming over ``link``: a header flit and one flit per beat, in full link frames
    (``B`` flits per ``B + h`` units, :mod:`optnet.frame`). Overhead is counted in the
    link's payload bits, so that a link layer whose clock cannot keep up with the link
    (a unit per cycle) shows the idle line as overhead too; the unused bits of a beat
    narrower than a flit count as overhead. On a direct cluster, a message: its EAGER (or
    RTS) control word's PHY words, then each beat's data words, at most one beat a network
    clock cycle (:meth:`~optnet.model.ModelParams.flit_time`); the credit a receiver
    returns takes the other direction's link."""
    payload = beats * beat_bits
    if params.direct is not None:
        header = params.direct.control_words(params.phy_bits[link.index])
        line_time = header * params.word_time(link) + beats * params.flit_time(link)
        return payload, line_time * params.link(link).payload_rate - payload
    line_bits = (beats + 1) * params.flit_time(link) * params.link(link).payload_rate
    return payload, line_bits - payload


def multipath_rate(nodes: int, link_rate: Fraction) -> Fraction:
    """OPTWEB's two-hop multipath on a fully connected cluster of ``nodes``: the transfer is
    cut into ``nodes`` equal parts, scattered from the source over all its links (one part
    staying put), then gathered by the destination over all of its; each phase moves one
    part per link, so ``M`` bits take ``2 M / (nodes * link_rate)``: ``nodes / 2`` links'
    worth."""
    return Fraction(nodes, 2) * link_rate
