"""``report.md``, ``report.html`` and ``report.json`` of one or more clusters.

The HTML page is self-contained: its style and its plots (topology, latency heat map,
per-hop breakdown, channel load, bandwidth against message size) are inline SVG, so it can
be mailed or archived alone. Several clusters go side by side: a comparison table first (the
way the BEE3 paper compares its five topologies), then each cluster's sections.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from optnet.emit.drawing import topology_svg
from optnet.emit.env import render_template
from optnet.emit.escape import Raw
from optnet.report import plots
from optnet.report.collectives import all_pairs_load
from optnet.report.latency import COMPONENTS
from optnet.report.params import model_params
from optnet.report.resources import NodeResources
from optnet.report.summary import cluster_report, report_json
from optnet.routing.route import Routed

__all__ = ["report_files"]


def report_files(routed: Sequence[Routed], build: dict | None = None, build_md: str = "",
                 resources: Sequence[Sequence[NodeResources]] = ()) -> dict[str, str]:
    """The three report files of ``routed`` (one cluster or several compared).

    Parameters
    ----------
    routed : sequence of Routed
    resources : sequence of sequences of NodeResources
        Per cluster, the resources of one node per hardware role (none: not synthesised).
    build : dict, optional
        What ``optnet build`` adds to ``report.json`` (its ``build`` member).
    build_md : str
        Markdown ``optnet build`` adds to ``report.md`` and ``report.html`` (nodes,
        bitstreams), already rendered.
    """
    resources = list(resources) or [()] * len(routed)
    docs = [cluster_report(r, model_params(r.cluster), res)
            for r, res in zip(routed, resources, strict=True)]
    sections = [] if len(docs) == 1 else [_comparison(docs)]
    for r, doc in zip(routed, docs, strict=True):
        sections += _sections(doc, _figures(r, doc))
    title = docs[0]["cluster"] if len(docs) == 1 else " vs ".join(d["cluster"] for d in docs)
    # build_md is Markdown for report.md; report.html shows it as text.
    context = dict(title=title, sections=sections, build_md=Raw(build_md, "md"))
    return {
        "report.json": json.dumps(report_json(docs, build), indent=2, sort_keys=True) + "\n",
        "report.md": render_template("report/report.md.j2", **context),
        "report.html": render_template("report/report.html.j2", **context),
    }


@dataclass(frozen=True)
class Table:
    """A table of a report section: header cells and rows of cells (text)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Section:
    """A part of the report both renderers draw: a heading, paragraphs, tables and plots
    (inline SVG, drawn by the HTML page only)."""

    title: str
    level: int
    text: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    figures: tuple[str, ...] = ()


def _comparison(docs: list[dict]) -> Section:
    rows = []
    for doc in docs:
        d = doc["latency"]["diameter"]
        uniform = doc["bandwidth"]["traffic"].get("uniform")
        rows.append((doc["cluster"], str(len(doc["nodes"])), str(doc["links"]),
                     str(doc["metrics"]["diameter_hops"]),
                     _ns(d["total_ns"]) if d else "-",
                     _rate(uniform["saturation_bps_per_node"]) if uniform else "-",
                     _ns(doc["collectives"]["broadcast"]["startup_ns"]),
                     _rate(doc["collectives"]["alltoall"]["limit_bps"])))
    return Section("Comparison", 2, ("Zero-load figures of each cluster, from the models "
                                     "below.",), (Table(
        ("cluster", "nodes", "links", "diameter (hops)", "diameter latency",
         "uniform saturation / node", "broadcast start-up", "alltoall / node"),
        tuple(rows)),))


def _sections(doc: dict, figures: dict[str, str]) -> list[Section]:
    latency, bandwidth = doc["latency"], doc["bandwidth"]
    out = [Section(f"Cluster {doc['cluster']}", 2, tuple(t for t in (
        doc["description"],
        f"{len(doc['nodes'])} nodes, {doc['links']} links"
        + (f", {doc['topology']} topology" if doc["topology"] else "")
        + f"; routing {doc['routing']['algorithm']}, broadcast {doc['routing']['broadcast']}"
        + ("; deadlock freedom proven." if doc["routing"]["deadlock_free"] else "."),
    ) if t), figures=(figures["topology"],))]
    hop_rows = tuple((kind, *(_ns(hop["parts_ns"][c]) for c in COMPONENTS),
                      _ns(hop["total_ns"])) for kind, hop in latency["per_hop"].items())
    direct = any("direct" in link for link in bandwidth["links"].values())
    text = ["One hop at zero load, by link type: the router it leaves, both link layers, "
            "the PHY pair, one frame's serialisation and the cable." if not direct else
            "One hop at zero load, by link type: a direct switch, no router (router: the "
            "switch's cycles each way; link_layer: both ends' clock crossings and gearboxes; "
            "serialisation: the PHY words of the message's EAGER word and of its first "
            "beat), the PHY pair and the cable."]
    d = latency["diameter"]
    if d is not None:
        hops = ", ".join(f"{n} x {kind}" for kind, n in d["hops"].items())
        text.append(f"Diameter: {d['src']} to {d['dst']}, {_ns(d['total_ns'])} through "
                    f"{d['routers']} routers and {hops}; round trip {_ns(d['round_trip_ns'])}.")
    out.append(Section("Latency", 3, tuple(text), (
        Table(("link type", *COMPONENTS, "hop"), hop_rows),
        *((Table(("diameter", *COMPONENTS, "total"), ((f"{d['src']} -> {d['dst']}", *(
            _ns(d["parts_ns"][c]) for c in COMPONENTS), _ns(d["total_ns"])),)),)
          if d else ())), (figures["breakdown"], figures["heat_map"])))
    sizes = (256, 1024, 4096)
    link_rows = tuple((kind, link["phy"], str(link["lanes"]), _rate(link["line_rate_bps"]),
                       f"{link['encoding']:.4f}", _rate(link["payload_rate_bps"]),
                       *(_pct(o["overhead"]) for o in link["overhead"]
                         if o["payload_bits"] in sizes))
                      for kind, link in bandwidth["links"].items())
    traffic = tuple((pattern, _rate(value["saturation_bps_per_node"]) if value else "n/a")
                    for pattern, value in bandwidth["traffic"].items())
    credits = tuple((c["endpoint"], str(c["window_packets"]), str(c["needed_packets"]),
                     "yes" if c["sufficient"] else "NO", _pct(c["share"]))
                    for c in bandwidth["credits"])
    btext = ["Payload rate: line rate x lanes x line code, capped by the IP's user "
             "interface. Channel overhead: the share of line bits that are not payload, "
             "for optnet packets of the given payload (header flit and link framing)."]
    if bandwidth["multipath_bps"]:
        btext.append(f"Two-hop multipath between two nodes: {_rate(bandwidth['multipath_bps'])}.")
    if credits:
        c = bandwidth["credits"][0]
        btext.append(f"Managed endpoints' credits on the slowest credit loop, {c['src']} to "
                     f"{c['dst']} and the grant back: {_ns(c['loop_ns'])}, packets of "
                     f"{_ns(c['packet_ns'])}. A source sends (init_budget - 1) x credit + "
                     "offset + 1 packets before it needs the first one's credit (the window), "
                     "so it never waits when the window covers the loop; lint's W101 gives "
                     "the same verdicts.")
    out.append(Section("Bandwidth", 3, tuple(btext), tuple(t for t in (
        Table(("link type", "PHY", "lanes", "line rate", "line code", "payload rate",
               *(f"overhead at {b} b" for b in sizes)), link_rows),
        Table(("traffic", "saturation per node"), traffic),
        Table(("managed endpoint", "window (packets)", "needed", "covers the loop",
               "share of the path's rate"), credits) if credits else None) if t),
        (figures["load"],)))
    shown = (64, 65536, 16 * 2**20)
    coll_rows = []
    for name, row in doc["collectives"].items():
        if "startup_ns" not in row:
            continue
        times = {p["bytes"]: p["time_ns"] for p in row["curve"]}
        coll_rows.append((name, _ns(row["startup_ns"]), _rate(row["limit_bps"]),
                          *(_ns(times[b]) if name != "barrier" else "-" for b in shown)))
    ctext = ["Each collective as unicast transfers started together; time = start-up + "
             "busiest channel's load x message / its rate. Bandwidth per node counts what a "
             "node sends and receives."]
    cusc = doc["collectives"].get("cuscomnet_broadcast")
    if cusc:
        last = cusc["curve"][-1]
        ctext.append(f"CusComNet's cascade broadcast model (k^ = {cusc['max_links']}): "
                     f"{_ns(last['time_ns'])} for {last['bytes']} bytes.")
    out.append(Section("Collectives", 3, tuple(ctext), (Table(
        ("collective", "start-up", "per node, large messages", "64 B", "64 KiB", "16 MiB"),
        tuple(coll_rows)),), (figures["bandwidth"],)))
    if doc["resources"]:
        out.append(_resources(doc["resources"]))
    params = doc["parameters"]
    out.append(Section("Model parameters", 3, (
        "Override any of them in the cluster file's model: mapping (docs/report.md).",),
        (Table(("parameter", "value"), tuple((k, str(v)) for k, v in params.items())),)))
    return out


def _resources(nodes: list[dict]) -> Section:
    text = ["One node per hardware role, synthesised with Yosys for its family; each module is "
            "counted once per instance, the vendor link IP comes from ipdata/link_ip.yaml."]
    tables = []
    for node in nodes:
        logic = node["logic"]
        rows = [(component, *(f"{usage[k]:g}" for k in (logic, "ff", "bram", "dsp")))
                for component, usage in node["components"].items()]
        rows.append(("total" + ("" if node["ip_complete"] else " (without the IP lacking a "
                                "figure)"), *(f"{node['total'][k]:g}" for k in
                                              (logic, "ff", "bram", "dsp"))))
        rows.append(("% of the board", *(f"{node['percent'].get(k, 0.0):.2f} %"
                                         for k in (logic, "ff", "bram", "dsp"))))
        tables.append(Table((f"{node['node']} ({node['board']}, {node['family']})",
                             logic.upper(), "FF", "BRAM", "DSP"), tuple(rows)))
        text.append(f"{node['node']}: {node['script']}.")
        text += [note for note in (node["fallback_note"], *node["caveats"]) if note]
        text += [f"{ip['protocol']} x{ip['lanes']}: {ip['reason']}" for ip in node["ip"]
                 if ip["each"] is None]
    return Section("Resources", 3, tuple(text), tuple(tables))


def _figures(routed: Routed, doc: dict) -> dict[str, str]:
    latency, name = doc["latency"], doc["cluster"]
    figures = {"topology": _inline(topology_svg(routed.cluster))}
    figures["heat_map"] = plots.heat_map(f"Zero-load latency, {name}", doc["nodes"],
                                         latency["matrix_ns"], "ns")
    rows = [(kind, hop["parts_ns"]) for kind, hop in latency["per_hop"].items()]
    if latency["diameter"] is not None:
        d = latency["diameter"]
        rows.append((f"diameter {d['src']}->{d['dst']}", d["parts_ns"]))
    figures["breakdown"] = plots.bars(f"Latency by component, {name}", rows, "ns")
    figures["load"] = plots.bars(f"Channel load of alltoall (busiest 16), {name}",
                                 _channel_load(routed), "transfers")
    series = {c: [(point["bytes"], point["bps"] / 1e9) for point in row["curve"]]
              for c, row in doc["collectives"].items()
              if c != "barrier" and "startup_ns" in row}
    figures["bandwidth"] = plots.lines(f"Bandwidth per node against message size, {name}",
                                       series, "message size (bytes)", "Gb/s")
    return figures


def _channel_load(routed: Routed) -> list[tuple[str, dict[str, float]]]:
    # transfers per channel when every node sends to every other (the alltoall model)
    load = all_pairs_load(routed)
    busiest = sorted(load.items(), key=lambda item: (-item[1], item[0]))[:16]
    return [(routed.net.name(c), {"transfers": float(k)}) for c, k in busiest]


def _inline(svg: str) -> Raw:
    # an SVG file's text without its XML declaration and comments, to embed in HTML
    lines = [line for line in svg.splitlines()
             if not line.startswith(("<?xml", "<!--"))]
    return Raw("\n".join(lines), "html")


def _ns(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.3f} us" if value >= 10000 else f"{value:.1f} ns"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1e9:.2f} Gb/s" if value >= 1e8 else f"{value / 1e6:.1f} Mb/s"


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"
