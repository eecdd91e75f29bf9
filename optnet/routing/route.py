"""The routing stage: choose an algorithm, route, plan broadcast, prove deadlock freedom."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optnet.cluster import Cluster
from optnet.diagnostics import Diagnostic
from optnet.model import model_params
from optnet.routing.algorithms import ALGORITHMS, NotApplicable, Routing, pick_auto
from optnet.routing.arrays import chunks
from optnet.routing.broadcast import Broadcast, plan_broadcast
from optnet.routing.network import Network
from optnet.routing.proof import Proof, Waits, describe_cycle, prove
from optnet.spec.source import SourceMap

__all__ = ["Routed", "route"]


@dataclass(frozen=True)
class Routed:
    """A routed cluster.

    Attributes
    ----------
    cluster : Cluster
    net : Network
    routing : Routing
    reason : str
        Why this algorithm (``chosen in the file`` or what ``auto`` saw).
    broadcast : Broadcast
    proof : Proof
    """

    cluster: Cluster
    net: Network
    routing: Routing
    reason: str
    broadcast: Broadcast
    proof: Proof

    @property
    def why(self) -> str:
        """Why the routing is deadlock-free, as it actually holds: the algorithm's VC rule
        when there are VCs for all its classes, else the proof with the classes folded onto
        the VCs there are (empty when the proof failed)."""
        if not self.proof.ok:
            return ""
        vcs, needed = self.cluster.desc.network.vcs, self.routing.vcs_needed
        if vcs >= needed:
            return self.routing.note
        return (f"'{self.routing.algorithm}' assigns {needed} VC classes, but the network has "
                f"{vcs} VC{'s' if vcs > 1 else ''}; with the classes above VC {vcs - 1} folded "
                "onto it, the proof still finds no cycle in the graph of the hardware's waits "
                f"on these routes, so {vcs} VC{'s suffice' if vcs > 1 else ' suffices'} here")


def route(cluster: Cluster, smap: SourceMap) -> tuple[Routed | None, list[Diagnostic]]:
    """Route ``cluster``.

    Returns
    -------
    (Routed or None, diagnostics)
        None when the algorithm cannot be applied (E202). A Routed whose proof failed
        comes with E201; callers must not build it. ``cluster`` must be connected.
    """
    spec = cluster.desc.routing
    net = Network.of(cluster)
    where = smap.at(("routing", "algorithm"))
    name, reason = spec.algorithm, "chosen in the cluster file"
    if name == "auto":
        name, reason = pick_auto(net)
        reason = f"auto: {reason}"
    try:
        routing = ALGORITHMS[name](net)
    except NotApplicable as exc:
        return None, [Diagnostic("E202", f"Routing algorithm '{name}' cannot route cluster "
                                 f"'{cluster.name}': {exc}.", where,
                                 hint="Use 'shortest' or 'up_down', which route any connected "
                                 "network.")]
    _check_reachable(net, routing)
    diags: list[Diagnostic] = []
    mode = spec.broadcast
    if mode == "unicast" and routing.algorithm != "direct":
        diags.append(Diagnostic(
            "E203", f"Broadcast by unicast fan-out sends one packet per destination over the "
            f"direct links, but '{routing.algorithm}' routing is not one-hop on this network.",
            smap.at(("routing", "broadcast")),
            hint="Use broadcast: tree or cascade, or a fully connected topology."))
        mode = "tree"
    if spec.multipath is not None and routing.algorithm != "direct":
        diags.append(Diagnostic(
            "W201", f"2-hop multipath is defined for direct routing on fully connected "
                    f"networks; '{routing.algorithm}' routing ignores it.",
            smap.at(("routing", "multipath"), key=True)))
    broadcast = plan_broadcast(net, routing, mode)
    vcs = cluster.desc.network.vcs
    waits = Waits.of(cluster.desc.network, model_params(cluster).buffer_depth)
    proof = prove(net, routing, broadcast, vcs, waits)
    if not proof.ok:
        diags.append(_deadlock(cluster, net, routing, proof, vcs, smap))
    return Routed(cluster, net, routing, reason, broadcast, proof), diags


def _check_reachable(net: Network, routing: Routing) -> None:
    # Lint reports a disconnected cluster (E111) before routing runs, and every algorithm
    # routes all pairs of a connected network it accepts; a gap here is a bug in optnet.
    for start, stop in chunks(net.size, net.size):
        nxt, _ = routing.matrices(start, stop)
        if (nxt == -2).any():
            d, s = (int(i[0]) for i in np.nonzero(nxt == -2))
            raise AssertionError(f"{routing.algorithm} routing left node {s} without a route "
                                 f"to node {start + d}")


def _deadlock(cluster: Cluster, net: Network, routing: Routing, proof: Proof, vcs: int,
              smap: SourceMap) -> Diagnostic:
    needed = routing.vcs_needed
    if needed > vcs:
        hint = (f"'{routing.algorithm}' routing needs {needed} VCs on this network: set "
                f"network.vcs to {needed}, or use routing.algorithm: up_down, which is "
                "deadlock-free with one VC.")
        where = smap.at(("network", "vcs"))
    else:
        hint = ("The broadcast replication closes the cycle: use routing.broadcast: cascade, or "
                "up_down routing.")
        where = smap.at(("routing", "broadcast"))
    return Diagnostic(
        "E201", f"'{routing.algorithm}' routing on cluster '{cluster.name}' with {vcs} VC"
        f"{'s' if vcs > 1 else ''} can deadlock: its channel dependency graph has the cycle "
        f"{describe_cycle(net, proof)}.", where, hint=hint)
