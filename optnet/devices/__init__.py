"""The devices layer: what optnet knows about FPGAs, as data with sources.

Everything here is a fact about a device or a vendor's IP, not a decision about a cluster:
FPGA families and what each has (:mod:`optnet.devices.families`), the datasheet limits of
their PLLs (:mod:`optnet.devices.plls`), the vendor link IP cores and the ports each
configuration generates (:mod:`optnet.devices.linkip`), and, as they are added, parts,
transceiver quads and banks and reference clock pads. Each table cites where its figures
come from.

The layer sits above the core (:mod:`optnet.units`, :mod:`optnet.diagnostics`) and below
the cluster description (:mod:`optnet.spec`): it imports nothing of optnet but the core,
and every later stage may read it. Planning (:mod:`optnet.plan`) makes the decisions from
these facts.
"""
