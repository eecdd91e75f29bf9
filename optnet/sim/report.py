"""What a simulation measured, next to what the report's models predict, as JSON, Markdown
text and an HTML page in the report's style.

Predictions (:func:`predictions`):

- *Zero-load latency* per unicast flow class: the report's zero-load latency of each pair the
  traffic uses (:func:`optnet.routing.latency.path_latency`: hubs, routers, link layers, PHY,
  serialisation, cable), averaged with the traffic's weights (pair traffic: its pairs, an
  endpoint's stream a share of its node's endpoints). It is compared with the
  simulated *head* latency (the first beat taken at the source to the first beat taken at
  the destination), whose minimum is the zero-load figure and whose mean approaches it at
  low load.
- *Saturation throughput*: the offered load (beats per network cycle per endpoint) at which
  the busiest resource is full, from the channel loads of the traffic on the routes: a link
  carries at most one flit per :meth:`optnet.model.ModelParams.flit_time`, a packet of ``B``
  beats is ``B + 1`` flits with its header (on a direct cluster a message of ``B`` beats
  takes ``B + 1`` cycles of its switch, its EAGER word's and a word a beat), and a node's
  router takes and gives at most one flit a cycle at its local port; and a VC carries at
  most a buffer's worth of flits per credit loop of its link
  (:meth:`optnet.model.ModelParams.vc_share`). Endpoint credit and the link layers' replay
  windows are not modelled. It is
  compared with the accepted throughput, which at an offered load above saturation is the
  network's saturation throughput.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from optnet.emit.env import render_template
from optnet.plan.registers import register_map
from optnet.report import plots
from optnet.report.render import Section, Table
from optnet.routing.latency import path_latency
from optnet.routing.metrics import Capacity
from optnet.routing.route import Routed
from optnet.sim.run import SimResult
from optnet.sim.setup import SimSetup, Traffic

__all__ = ["Prediction", "predictions", "sim_files", "sim_summary", "sweep_files",
           "sweep_summary"]


@dataclass(frozen=True)
class Prediction:
    """The models' figures for a traffic.

    Attributes
    ----------
    zero_load_ns : float or None
        Mean zero-load latency of the unicast pairs the traffic uses (None: no unicasts).
    saturation : float or None
        Offered load at saturation, beats per network cycle per endpoint (None: not
        modelled, as for broadcasts and message files).
    bottleneck : str
        What saturates first.
    """

    zero_load_ns: float | None
    saturation: float | None
    bottleneck: str


def _weights(pattern: str, n: int, permutation: Sequence[int],
             pairs: Sequence[tuple[int, int, int]] = (), eps: int = 1
             ) -> dict[tuple[int, int], float]:
    # each (source, destination) pair's share of its source's unicast traffic
    if pairs:
        # one of a node's eps endpoints sending is 1/eps of what its every endpoint would
        weights: dict[tuple[int, int], float] = defaultdict(float)
        for s, _, d in pairs:
            weights[s, d] += 1 / eps
        return dict(weights)
    if pattern in ("uniform", "alltoall"):
        return {(s, d): 1 / (n - 1) for s in range(n) for d in range(n) if s != d}
    if pattern in ("transpose", "tornado"):
        return {(s, d): 1.0 for s, d in enumerate(permutation) if d >= 0}
    return {}


def predictions(routed: Routed, setup: SimSetup, traffic: Traffic,
                permutation: Sequence[int] = ()) -> Prediction:
    """The models' zero-load latency and saturation load for ``traffic``."""
    params = setup.params
    n = len(setup.plans)
    weights = _weights(traffic.pattern, n, permutation, traffic.pairs,
                       len(setup.plans[0].endpoints))
    if not weights:
        return Prediction(None, None, "")
    zero = sum(w * float(path_latency(routed, params, s, d).total) for (s, d), w in
               weights.items()) / sum(weights.values()) * 1e9
    net = routed.net
    cfg = setup.plans[0].endpoints[0]
    direct = setup.plans[0].direct is not None
    most = cfg.max_packet - (0 if direct else 1)
    beats = min(traffic.beats, most) if traffic.beats else most
    # a packet's header flit; a direct message's EAGER word, a switch cycle of its own
    flits_per_beat = (beats + 1) / beats
    eps = len(setup.plans[0].endpoints)
    load: dict[int, float] = defaultdict(float)
    vc_load: dict[tuple[int, int], float] = defaultdict(float)
    routing, capacity = routed.routing, Capacity(net, params)
    for (s, d), w in weights.items():
        for channel in routing.path(net, s, d):
            flits = w * eps * flits_per_beat
            load[channel] += flits
            vc_load[channel, capacity.vc(routing.vclass[d][net.src[channel]])] += flits
    limits = [(1.0, "the endpoints (a beat a cycle)")]
    # a node's local port (a direct node's switch): every endpoint's flits in, the same out
    inject = max(sum(w for (s, _), w in weights.items() if s == i) for i in range(n))
    eject = max(sum(w for (_, d), w in weights.items() if d == i) for i in range(n))
    limits.append((1.0 / (eps * flits_per_beat * max(inject, eject)),
                   "the direct switches (a word a cycle, a message's EAGER word included)"
                   if direct else "the routers' local ports (a flit a cycle)"))
    flit_rate = params.flit_bits * params.clock    # bit/s at a flit a cycle
    for channel, flits in load.items():
        link = net.link(channel)
        per_cycle = float(capacity.link(channel)[0] / flit_rate)
        limits.append((per_cycle / flits, f"link {link.a.node}-{link.b.node} "
                                          f"({per_cycle:.3g} flits a cycle)"))
    # A VC sends at most a buffer's worth per credit loop of its link.
    for (channel, vc), flits in vc_load.items():
        rate, vc_rate = capacity.link(channel)
        if vc_rate < rate:
            link = net.link(channel)
            per_cycle = float(vc_rate / flit_rate)
            limits.append((per_cycle / flits, f"VC {vc} of link {link.a.node}-"
                           f"{link.b.node} (its credit loop: {per_cycle:.3g} flits a cycle)"))
    saturation, bottleneck = min(limits, key=lambda x: x[0])
    return Prediction(zero, saturation, bottleneck)


def _stats(cycles: dict, ns_per_cycle: float) -> dict:
    return {k: v * ns_per_cycle for k, v in cycles.items()}


def sim_summary(setup: SimSetup, traffic: Traffic, result: SimResult,
                prediction: Prediction, options: dict,
                senders: Sequence[tuple[int, int]] | None = None) -> dict:
    """The run as one JSON-ready mapping: settings, verdict, errors, latency per flow class
    (ns), throughput, links, and the predictions beside the measurements.

    ``senders`` are the (node index, endpoint) that offer traffic (default: every endpoint
    of every node); the accepted load is per sending endpoint and the throughput per
    sending node, as the offered load and the predictions are.
    """
    data = result.data
    ns = 1e9 / float(setup.network_hz)
    plans = setup.plans
    names = plans[0].endpoint_names
    eps = len(names)
    if senders is None:
        senders = [(i, e) for i in range(len(plans)) for e in range(eps)]
    sending_nodes = max(1, len({i for i, _ in senders}))
    # the bits a sending node offers a cycle at load 1 (every endpoint's beat on most nodes)
    node_bits = sum(plans[0].endpoints[e].width for _, e in senders) / sending_nodes
    cycles = max(1, data["traffic_cycles"])
    window = max(1, cycles - data["window_start"])
    classes = []
    for c in data["classes"]:
        if not c["packets"]:
            continue
        classes.append({"endpoint": names[c["endpoint"]],
                        "kind": "broadcast" if c["broadcast"] else "unicast",
                        "priority": plans[0].endpoints[c["endpoint"]].priority,
                        "packets": c["packets"], "beats": c["beats"],
                        "head_ns": _stats(c["head"], ns), "packet_ns": _stats(c["packet"], ns)})
    sources = data["sources"]
    offered = sum(s["made"] for s in sources)
    sent_beats = sum(s["sent_beats"] for s in sources)
    received_beats = sum(s["received_beats"] for s in sources)
    accepted = data["window_beats"] / window / max(1, len(senders))
    hz = float(setup.network_hz)
    per_node_bps = data["window_bits"] / (window / hz) / sending_nodes
    links = []
    for line, measured in zip(setup.lines, data["lines"], strict=True):
        link = setup.links[line.link]
        capacity = min(1.0, float(1 / (setup.params.flit_time(link) * setup.params.clock)))
        tx, rx = plans[line.tx[0]], plans[line.rx[0]]
        links.append({"link": line.link, "from": f"{tx.node}.{tx.ports[line.tx[1]].name}",
                      "to": f"{rx.node}.{rx.ports[line.rx[1]].name}",
                      "flits": measured["flits"],
                      "utilisation": measured["flits"] / cycles / capacity,
                      "flipped_bits": measured["flipped"], "lost_words": measured["lost_words"],
                      "latency_cycles": line.latency})
    counters = {plans[i].node: [dict(port, link=plans[i].ports[k].name)
                                for k, port in enumerate(row)]
                for i, row in enumerate(data["ports"])}
    drops = {plans[i].node: d for i, d in enumerate(data["dropped"]) if d}
    kit = {plans[i].node: {r.name: value for r, value in zip(register_map(plans[i]), values,
                                                              strict=True)}
           for i, values in enumerate(data.get("registers", []))}
    kit_ok = all(regs["dropped"] == 0 and all(
        regs[f"{e}.received"] > 0 and regs[f"{e}.out_of_sequence"] == 0
        and regs[f"{e}.bad_beats"] == 0 for e in names) for regs in kit.values())
    return {
        "cluster": options.get("cluster", ""),
        "settings": {**options, "pattern": traffic.pattern, "load": traffic.load,
                     "packets": traffic.packets, "cycles": traffic.cycles,
                     "beats": traffic.beats, "ready": traffic.ready},
        "verdict": data["verdict"],
        "ok": data["verdict"] in ("complete", "time_limit") and not any(
            data["errors"][k] for k in ("out_of_order", "unexpected", "corrupt")) and (
            data["verdict"] == "time_limit" or data["errors"]["missing"] == 0) and kit_ok,
        "bringup": kit or None,
        "network_clock_hz": hz,
        "simulated_ns": cycles * ns, "cycles": data["cycles"], "traffic_cycles": cycles,
        "links_up_ns": data["links_up_cycle"] * ns if data["links_up_cycle"] >= 0 else None,
        "wall_s": data["wall_s"], "cycles_per_s": data["cycles"] / max(data["wall_s"], 1e-9),
        "packets": {"offered": offered, "expected": data["expected"],
                    "delivered": data["delivered"], "in_flight": data["expected"] -
                    data["delivered"], "refused": sum(s["refused"] for s in sources)},
        # (at the time limit, what has not arrived is in flight, not missing)
        "errors": {**data["errors"], "missing": 0} if data["verdict"] == "time_limit"
        else data["errors"],
        # the first packets that never arrived (none listed at a time limit: in flight)
        "missing": [] if data["verdict"] == "time_limit" else [
            {"to": plans[d].node, "endpoint": names[e], "from": plans[s].node,
             "kind": "broadcast" if k else "unicast", "sequence": seq, "sent_ns": t * ns}
            for d, e, s, k, seq, t in data["missing"]],
        "beats": {"sent": sent_beats, "received": received_beats},
        "throughput": {"offered_load": traffic.load, "accepted_load": accepted,
                       "per_node_bps": per_node_bps, "sending_endpoints": len(senders)},
        "classes": classes,
        "links": links,
        "link_counters": counters,
        "dropped": drops,
        "prediction": {"zero_load_ns": prediction.zero_load_ns,
                       "saturation_load": prediction.saturation,
                       "saturation_per_node_bps": None if prediction.saturation is None else
                       prediction.saturation * hz * node_bits,
                       "bottleneck": prediction.bottleneck},
    }


def _f(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}{unit}"


def _sections(doc: dict) -> list[Section]:
    s = doc["settings"]
    pk, err, tp, pr = doc["packets"], doc["errors"], doc["throughput"], doc["prediction"]
    verdict = {"complete": "every packet arrived", "time_limit": "ran for the time asked",
               "stalled": "STALLED: packets missing and nothing delivered for the stall limit "
                          "(a deadlock or a lost packet)",
               "links_down": "LINKS DOWN: not every link came up"}[doc["verdict"]]
    errors = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in err.items() if v) or "none"
    run = Section("Run", 2, (
        f"Traffic {s['pattern']}, offered load {s['load']:g} beats a cycle per endpoint, "
        f"seed {s.get('seed', 1)}; {doc['traffic_cycles']:,} network cycles "
        f"({_f(doc['simulated_ns'] / 1000, ' us', 2)}) of traffic at "
        f"{doc['network_clock_hz'] / 1e6:g} MHz, links up after "
        f"{_f(doc['links_up_ns'], ' ns')}.",
        f"Verdict: {verdict}. Errors: {errors}. Packets: {pk['delivered']:,} delivered of "
        f"{pk['expected']:,} sent ({pk['in_flight']:,} in flight at the end), "
        f"{pk['refused']:,} refused by full source queues.",
        f"Simulated in {doc['wall_s']:.1f} s, {doc['cycles_per_s']:,.0f} network cycles a "
        f"second."))
    rows = tuple((c["endpoint"], c["kind"], str(c["priority"]), f"{c['packets']:,}",
                  _f(c["head_ns"]["min"]), _f(c["head_ns"]["mean"]), _f(c["head_ns"]["p50"]),
                  _f(c["head_ns"]["p99"]), _f(c["head_ns"]["max"]),
                  _f(c["packet_ns"]["mean"]), _f(c["packet_ns"]["p99"]))
                 for c in doc["classes"])
    latency = Section("Latency per flow class", 2, (
        "Head: the first beat taken at the source to the first beat taken at the "
        "destination. Packet: the packet made at the source (queueing included) to its last "
        "beat taken. Nanoseconds.",), (Table(
            ("endpoint", "kind", "priority", "packets", "head min", "head mean", "head p50",
             "head p99", "head max", "packet mean", "packet p99"), rows),))
    model = Section("Against the report's models", 2, (
        "The model's zero-load latency is the report's, averaged over the pairs the traffic "
        "uses; the measured figure is the minimum and mean head latency of unicasts. The "
        "saturation load is where the busiest resource on the routes is full "
        f"({pr['bottleneck'] or 'not modelled for this traffic'}); the accepted load is "
        "what the network delivered per endpoint after the first fifth of the run (with "
        "--cycles).",), (Table(("figure", "model", "measured"), (
            ("zero-load latency", _f(pr["zero_load_ns"], " ns"), " / ".join(
                _f(c["head_ns"][k], " ns") for c in doc["classes"] if c["kind"] == "unicast"
                for k in ("min", "mean")) or "-"),
            ("saturation load (beats/cycle/endpoint)", _f(pr["saturation_load"], "", 3),
             _f(tp["accepted_load"], "", 3) + f" at offered {tp['offered_load']:g}"),
            ("throughput per node", _f(None if pr["saturation_per_node_bps"] is None else
                                       pr["saturation_per_node_bps"] / 1e9, " Gb/s", 2),
             _f(tp["per_node_bps"] / 1e9, " Gb/s", 2)))),))
    links = Section("Links", 2, (
        "Utilisation: flits (direct: words) sent over the run against what the link carries "
        "(its flit time). Bit errors and words lost are the link model's; CRC errors, "
        "resends and losses the link layers' counters.",), (Table(
            ("link", "from", "to", "flits", "utilisation", "flipped bits", "lost words"),
            tuple((str(x["link"]), x["from"], x["to"], f"{x['flits']:,}",
                   f"{100 * x['utilisation']:.1f} %", f"{x['flipped_bits']:,}",
                   f"{x['lost_words']:,}") for x in doc["links"])),
            Table(("node", "link", "crc errors", "resent", "lost", "restarts"), tuple(
                (node, c["link"], *(str(c[k]) for k in ("crc_errors", "resent", "lost",
                                                        "restarts")))
                for node, ports in doc["link_counters"].items() for c in ports
                if len(c) > 1))))
    sections = [run, links] if doc["bringup"] else [run, latency, model, links]
    if doc["bringup"]:
        sections.insert(1, _bringup(doc["bringup"]))
    if doc["missing"]:
        sections.append(Section("Missing packets", 2, (
            "The first packets that never arrived, by flow; sequence numbers count each "
            "flow's packets from 0, sent at the given time after the traffic started.",), (
            Table(("to", "endpoint", "from", "kind", "sequence", "sent"), tuple(
                (x["to"], x["endpoint"], x["from"], x["kind"], str(x["sequence"]),
                 _f(x["sent_ns"], " ns")) for x in doc["missing"])),)))
    if doc["dropped"]:
        sections.append(Section("Drops", 2, ("Packets the routers dropped as unroutable: " +
                                             ", ".join(f"{k} {v}" for k, v in
                                                       doc["dropped"].items()) + ".",)))
    return sections


def _bringup(kit: dict[str, dict[str, int]]) -> Section:
    # what each board's registers would show a host over its UART (docs/bringup.md)
    endpoints = sorted({name.split(".")[0] for regs in kit.values() for name in regs
                        if name.endswith(".received")})
    header = ("node", "id", "links up", "dropped", *(f"{e} {field}" for e in endpoints for
                                                     field in ("sent", "received",
                                                               "out of sequence", "bad beats")),
              "CRC errors", "resent")
    rows = []
    for node, regs in kit.items():
        links = regs["links"]
        rows.append((node, str(regs["node_id"]), f"{bin(regs['link_up']).count('1')} of {links}",
                     str(regs["dropped"]),
                     *(str(regs[f"{e}.{f}"]) for e in endpoints
                       for f in ("sent", "received", "out_of_sequence", "bad_beats")),
                     str(sum(regs.get(f"link{k}.crc_errors", 0) for k in range(links))),
                     str(sum(regs.get(f"link{k}.resent", 0) for k in range(links)))))
    return Section("Bring-up kit", 2, (
        "Every endpoint driven by its board's traffic generator (PRBS payloads to every other "
        "node in turn) and checked by its checker, as on the boards; the figures are the "
        "kit's registers at the end of the run, as a host reads them over the UART "
        "(docs/bringup.md).",), (Table(header, tuple(rows)),))


#: The introduction of every simulation's Markdown and HTML.
_INTRO = ("Generated by optnet sim: the cluster's generated Verilog, Verilated, with link "
          "models between the nodes; docs/sim.md describes the run and the figures.")


def sim_files(doc: dict) -> dict[str, str]:
    """``sim.json``, ``sim.md`` and ``sim.html`` of a run summarised by :func:`sim_summary`."""
    return _files(doc, f"{doc['cluster']} simulation", _sections(doc))


def sweep_summary(runs: Sequence[dict]) -> dict:
    """A load sweep as one JSON-ready mapping: the settings its runs share (``loads``, in
    the order run, instead of ``load``), ``ok`` when every run is, the predictions (which do
    not depend on the load), and each run's :func:`sim_summary` under ``runs``."""
    first = runs[0]
    settings = {k: v for k, v in first["settings"].items() if k != "load"}
    return {"cluster": first["cluster"],
            "settings": {**settings, "loads": [r["settings"]["load"] for r in runs]},
            "ok": all(r["ok"] for r in runs),
            "network_clock_hz": first["network_clock_hz"],
            "wall_s": sum(r["wall_s"] for r in runs),
            "prediction": first["prediction"],
            "runs": list(runs)}


def sweep_files(doc: dict) -> dict[str, str]:
    """``sim.json``, ``sim.md`` and ``sim.html`` of a load sweep summarised by
    :func:`sweep_summary`: a table of every run's throughput and latency per flow class, the
    predictions beside the sweep's figures, and (in ``sim.html``) the latency-throughput
    curve."""
    return _files(doc, f"{doc['cluster']} load sweep", _sweep_sections(doc))


def _run_verdict(run: dict) -> str:
    # a run's verdict in a table cell: ok, or what went wrong
    if run["ok"]:
        return "ok"
    errors = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in run["errors"].items() if v)
    return run["verdict"].replace("_", " ") + (f": {errors}" if errors else "")


def _sweep_sections(doc: dict) -> list[Section]:
    s, pr, runs = doc["settings"], doc["prediction"], doc["runs"]
    length = (f"{s['cycles']:,} network cycles" if s["cycles"] else
              f"{s['packets']:,} packets per sending endpoint")
    bad = [r for r in runs if not r["ok"]]
    verdicts = ("Verdicts: every run ok (no packet lost, corrupted or out of order)." if not bad
                else "Runs with errors: " + "; ".join(
                    f"load {r['settings']['load']:g}, {_run_verdict(r)}" for r in bad) + ".")
    run = Section("Load sweep", 2, (
        f"Traffic {s['pattern']}, seed {s.get('seed', 1)}, at {len(runs)} offered loads "
        f"({', '.join(f'{x:g}' for x in s['loads'])} beats a cycle per sending endpoint), "
        f"each run {length} on the one simulator; network clock "
        f"{doc['network_clock_hz'] / 1e6:g} MHz.",
        verdicts,
        f"Simulated in {doc['wall_s']:.1f} s."))
    rows = []
    for r in runs:
        tp = r["throughput"]
        head = (f"{tp['offered_load']:g}", _f(tp["accepted_load"], "", 3),
                _f(tp["per_node_bps"] / 1e9, " Gb/s", 2))
        for c in r["classes"] or [None]:
            cells = ("-",) * 7 if c is None else (
                c["endpoint"], c["kind"], f"{c['packets']:,}", _f(c["head_ns"]["min"]),
                _f(c["head_ns"]["mean"]), _f(c["head_ns"]["p99"]), _f(c["packet_ns"]["mean"]))
            rows.append((*head, *cells, _run_verdict(r)))
    table = Section("Latency and throughput against offered load", 2, (
        "Per run and flow class: the offered load, the accepted load (beats a cycle per "
        "sending endpoint, after the first fifth of a --cycles run) and throughput per sending "
        "node; head latency (the first beat taken at the source to the first beat taken at "
        "the destination) and packet latency (queueing in the source included), nanoseconds. "
        "The curve of mean head latency against accepted load, with the model's saturation "
        "and zero-load latency, is in sim.html.",), (Table(
            ("offered", "accepted", "per node", "endpoint", "kind", "packets", "head min",
             "head mean", "head p99", "packet mean", "verdict"), tuple(rows)),),
        (_sweep_curve(doc),))
    unicast = [(r, c) for r in runs for c in r["classes"] if c["kind"] == "unicast"]
    lowest = min(runs, key=lambda r: r["settings"]["load"])
    best = max(runs, key=lambda r: r["throughput"]["accepted_load"])
    model = Section("Against the report's models", 2, (
        "The model's zero-load latency is the report's, averaged over the pairs the traffic "
        "uses, against the least head latency of the sweep's unicasts and their mean at the "
        "lowest load; its saturation load is where the busiest resource on the routes is full "
        f"({pr['bottleneck'] or 'not modelled for this traffic'}), against the most the "
        "network accepted at any load.",), (Table(("figure", "model", "measured"), (
            ("zero-load latency", _f(pr["zero_load_ns"], " ns"),
             (f"{_f(min(c['head_ns']['min'] for _, c in unicast), ' ns')} / " + " / ".join(
                 _f(c["head_ns"]["mean"], " ns") for c in lowest["classes"]
                 if c["kind"] == "unicast") + f" at offered {lowest['settings']['load']:g}")
             if unicast else "-"),
            ("saturation load (beats/cycle/endpoint)", _f(pr["saturation_load"], "", 3),
             _f(best["throughput"]["accepted_load"], "", 3) +
             f" at offered {best['settings']['load']:g}"),
            ("throughput per node", _f(None if pr["saturation_per_node_bps"] is None else
                                       pr["saturation_per_node_bps"] / 1e9, " Gb/s", 2),
             _f(best["throughput"]["per_node_bps"] / 1e9, " Gb/s", 2)))),))
    return [run, table, model]


def _sweep_curve(doc: dict) -> str:
    # mean head latency of each flow class against the accepted load, in offered order
    series: dict[str, list[tuple[float, float, str]]] = {}
    for r in sorted(doc["runs"], key=lambda r: r["settings"]["load"]):
        tp = r["throughput"]
        for c in r["classes"]:
            series.setdefault(f"{c['endpoint']} {c['kind']}", []).append((
                tp["accepted_load"], c["head_ns"]["mean"],
                f"{c['endpoint']} {c['kind']} at offered {tp['offered_load']:g}: accepted "
                f"{tp['accepted_load']:.3f}, mean head latency {c['head_ns']['mean']:,.1f} ns"))
    pr = doc["prediction"]
    return plots.curve(
        f"Head latency against accepted load, {doc['cluster']}, {doc['settings']['pattern']}",
        series, "accepted load (beats a cycle per sending endpoint)", "mean head latency (ns)",
        vertical=None if pr["saturation_load"] is None else (
            pr["saturation_load"], f"model saturation {pr['saturation_load']:.3g}"),
        horizontal=None if pr["zero_load_ns"] is None else (
            pr["zero_load_ns"], f"model zero-load {pr['zero_load_ns']:,.0f} ns"))


def _files(doc: dict, title: str, sections: list[Section]) -> dict[str, str]:
    context = dict(title=title, intro=_INTRO, sections=sections, build_md="")
    return {"sim.json": json.dumps(doc, indent=2, sort_keys=True) + "\n",
            "sim.md": render_template("report/report.md.j2", **context),
            "sim.html": render_template("report/report.html.j2", **context)}
