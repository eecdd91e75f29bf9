"""Routing results as JSON (the table files are rendered by :mod:`optnet.emit.tables`)."""

from __future__ import annotations

from optnet.routing.route import Routed
from optnet.routing.tables import NodeTable, to_json

__all__ = ["ROUTE_FORMAT", "route_json"]

ROUTE_FORMAT = 1


def route_json(routed: Routed, metrics: dict, tables: list[NodeTable] | None,
               paths: bool) -> dict:
    """The result of ``optnet route --format json`` (format version :data:`ROUTE_FORMAT`)."""
    routing, proof, net = routed.routing, routed.proof, routed.net
    names = [n.name for n in routed.cluster.nodes]
    doc: dict = {
        "version": ROUTE_FORMAT,
        "cluster": routed.cluster.name,
        "algorithm": {"name": routing.algorithm, "reason": routed.reason,
                      "vcs_needed": routing.vcs_needed,
                      "vcs": routed.cluster.desc.network.vcs, "note": routing.note,
                      "why_deadlock_free": routed.why},
        "proof": {"acyclic": proof.ok, "channels": proof.channels,
                  "dependencies": proof.dependencies,
                  "cycle": [{"channel": net.name(c), "vc": v, "wait": w}
                            for (c, v), w in zip(proof.cycle, proof.waits, strict=True)]},
        "broadcast": {"mode": routed.broadcast.mode, "note": routed.broadcast.note},
        "metrics": metrics,
    }
    if tables is not None:
        doc["tables"] = [to_json(t) for t in tables]
    if paths:
        doc["paths"] = [
            {"src": names[s], "dst": names[d],
             "hops": [net.name(c) for c in routing.path(net, s, d)]}
            for s in range(net.size) for d in range(net.size) if s != d]
    return doc
