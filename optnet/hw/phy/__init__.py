"""PHY adapters: what every link protocol looks like to the link layer.

Every adapter is a :class:`wiring.Component` with at least these members::

    tx : In(stream.Signature(unsigned(width)))                     words to send
    rx : Out(stream.Signature(unsigned(width), always_ready=True))  words received
    up : Out(1)                                                     link usable

``tx`` and ``rx`` live in the adapter's user clock domain, named by its ``domain``
attribute; the adapter creates that domain (its clock comes from the vendor IP or the
forwarded clock). ``rx`` has no ready: no link IP can stall its receiver, so the link layer
must take every word (it has the buffer space, because the far end only sends what the
link credits allow). Words arrive in order and whole; framing above the word is the link
layer's job. Pads (transceiver pins, reference clocks, LVDS pairs) are further members
named after the board file's fields. The width of each protocol's user words is
:func:`optnet.phys.user_width` (:func:`optnet.devices.linkip.user_width_for` for a vendor
core on a family).
"""

from __future__ import annotations

from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PhyInterface"]


class PhyInterface(wiring.Component):
    """Base of PHY adapters: the ``tx``/``rx``/``up`` members of the contract above.

    Parameters
    ----------
    width : int
        User word width.
    domain : str
        Name of the user clock domain the adapter creates.
    pads : dict of str to wiring.Member
        Extra members (pins) of the concrete adapter.
    """

    def __init__(self, width: int, domain: str, pads: dict | None = None):
        self.width = width
        self.domain = domain
        members = {
            "tx": In(stream.Signature(width)),
            "rx": Out(stream.Signature(width, always_ready=True)),
            "up": Out(1),
        }
        members.update(pads or {})
        super().__init__(members)
