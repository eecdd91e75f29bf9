"""The lint stage: read a cluster, board or preset file and collect every finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from optnet.boards import BoardLibrary, load_board_file, load_library
from optnet.checks import check_cluster
from optnet.cluster import Cluster
from optnet.diagnostics import Diagnostic, DiagnosticError, Location, Severity
from optnet.elaborate import elaborate
from optnet.model import model_params
from optnet.resources import data_dir, shown_path
from optnet.routing.latency import check_credit
from optnet.routing.route import Routed, route
from optnet.spec.inherit import inherit
from optnet.spec.models import ClusterDesc
from optnet.spec.source import InputError, SourceMap, load_yaml, read_source
from optnet.spec.validate import validate_pruned

__all__ = ["FORMAT_VERSION", "InputError", "LintResult", "lint_file", "load_presets"]

FORMAT_VERSION = 1

#: Lists of a cluster file whose items are left out, one by one, when they have schema
#: errors, and top-level sections left at their defaults (nothing before routing reads
#: them), so that lint still checks the rest of the file.
_LISTS = ("nodes", "links", "endpoints")
_SECTIONS = ("description", "source", "routing", "model")

#: Errors on a whole cluster that leave its graph as it is, so routing still runs.
_ROUTABLE = frozenset({"E106", "E107", "E110", "E113", "E115", "E117"})


@dataclass
class LintResult:
    """What linting one file produced."""

    text: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    cluster: Cluster | None = None
    routed: Routed | None = None
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(d.severity is Severity.ERROR for d in self.diagnostics)


def load_presets(extra: Path | None = None) -> dict[str, tuple[dict, SourceMap]]:
    """Topology presets by name: the shipped ones, then ``extra/*.yaml`` over them."""
    presets: dict[str, tuple[dict, SourceMap]] = {}
    for directory in (data_dir("topologies"), extra):
        if directory is None or not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.yaml")):
            try:
                shown = shown_path(path)
                data, smap, _ = load_yaml(read_source(path, shown), shown)
            except (InputError, DiagnosticError):
                continue  # a broken preset is reported when it is linted itself
            if isinstance(data, dict):
                presets[path.stem] = (data, smap)
    return presets


def _version(data: dict, smap: SourceMap, key: str, what: str) -> list[Diagnostic]:
    if key not in data:
        return [Diagnostic("E004", f"The {what} does not say which format version it is "
                           "written in.", Location(smap.file, 1, 1),
                           hint=f"Add '{key}: {FORMAT_VERSION}' at the top.")]
    if data[key] != FORMAT_VERSION or isinstance(data[key], bool):
        return [Diagnostic("E004", f"The {what} is written for format version "
                           f"{data[key]!r}; this optnet reads version {FORMAT_VERSION}.",
                           smap.at((key,)))]
    return []


def lint_file(path: Path, display: str | None = None,
              library: BoardLibrary | None = None, *, routing: bool = True,
              hardware: bool = True) -> LintResult:
    """Load, validate and elaborate a cluster (or preset) file and run every check on it;
    a board file (one with ``optnet_board:``) is checked as a board instead.

    Parameters
    ----------
    path : Path
    display : str, optional
        The name diagnostics use for the file (default: ``str(path)``).
    library : BoardLibrary, optional
        Boards to use; by default the shipped library plus a ``boards/`` folder next to the
        file.
    routing : bool
        Also route the cluster, prove it deadlock-free (E2xx) and check the endpoints'
        credits against the routes (W101); on by default.
    hardware : bool
        After a clean routing, also plan the hardware and check what the build would refuse
        (E3xx: PHYs without hardware, flit formats, clocks, vendor projects); on by default.

    Raises
    ------
    InputError
        If the file cannot be read or is not a regular file (a pipe, a device, a
        directory).
    """
    display = display or shown_path(path)
    result = LintResult()
    try:
        result.text = read_source(path, display)
        result.sources[display] = result.text
        data, smap, result.diagnostics = load_yaml(result.text, display)
    except DiagnosticError as exc:
        result.diagnostics += exc.diagnostics
        return result
    if not isinstance(data, dict):
        result.diagnostics.append(Diagnostic(
            "E005", "A cluster file must be a mapping of keys such as 'optnet', 'name' and "
            "'topology'.", smap.at(())))
        return result
    if "optnet_board" in data and "optnet" not in data:
        return _lint_board(path, display, result)
    version = _version(data, smap, "optnet", "cluster file")
    if version:
        result.diagnostics += version
        return result
    if "preset" in data:
        presets = load_presets(path.parent / "topologies")
        try:
            data, smap = inherit(data, smap, "preset", "topology preset", presets,
                                 point_at_key=True)
        except DiagnosticError as exc:
            result.diagnostics += exc.diagnostics
            return result
    # Schema errors leave out the node, link or endpoint they are in (or the report model,
    # routing or description section), so that the rest of the file is still checked.
    desc, diags, smap, pruned = validate_pruned(ClusterDesc, data, smap, lists=_LISTS,
                                                keys=_SECTIONS)
    result.diagnostics += diags
    if desc is None:
        return result
    if library is None:
        local = path.parent / "boards"
        library = load_library([data_dir("boards"), local])
        # Shipped boards are checked by optnet's own tests; report only the user's boards.
        mine = {shown_path(p) for p in local.glob("*.yaml")} if local.is_dir() else set()
        result.diagnostics += [d for d in library.diagnostics
                               if d.location and d.location.file in mine]
    cluster, diags = elaborate(desc, smap, library, broken=pruned.names)
    result.diagnostics += diags
    if cluster is not None:
        complete = not any(d.severity is Severity.ERROR for d in result.diagnostics)
        result.diagnostics += check_cluster(cluster, smap, complete=complete)
        result.cluster = cluster
        # Routing needs the whole cluster, every node and link of it; findings about rates,
        # buffers and credits do not change its graph. Its own findings are E2xx, and the
        # credit check (W101) follows routes that are deadlock-free, as the report's credit
        # table does.
        if routing and complete and all(d.severity is Severity.WARNING
                                        or d.code in _ROUTABLE for d in result.diagnostics):
            result.routed, diags = route(cluster, smap)
            result.diagnostics += diags
            if result.routed is not None and result.routed.proof.ok:
                result.diagnostics += check_credit(result.routed, model_params(cluster), smap)
            if hardware and result.ok:
                result.diagnostics += _hardware(result, smap)
    return result


def _hardware(result: LintResult, smap: SourceMap) -> list[Diagnostic]:
    """Plan the hardware of ``result.routed`` (without tables) and check what the emitters
    would refuse; every finding located in ``smap``."""
    # Lint drives the whole pipeline here, as the CLI does; imported late because the
    # hardware stages pull in Amaranth and Jinja2, which lint without routing never needs.
    from optnet.emit.checks import hardware_findings
    from optnet.plan import PlanError, plan

    try:
        plans = plan(result.routed, tables=False, one_per_role=True)
    except PlanError as exc:
        return [finding.located(smap) for finding in exc.args]
    found = [f for p in plans for f in p.xcvr.warnings]
    found += hardware_findings(result.routed.cluster, plans)
    return [f.located(smap) for f in found]


def _lint_board(path: Path, display: str, result: LintResult) -> LintResult:
    library = load_board_file(path)
    result.diagnostics += library.diagnostics
    for diag in library.diagnostics:
        if diag.location is not None:
            result.sources.setdefault(diag.location.file, result.text)
    return result
