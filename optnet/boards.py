"""The board library: ``boards/*.yaml`` loaded, merged along ``extends:`` and checked."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from optnet.diagnostics import Diagnostic, DiagnosticError, Location
from optnet.resources import data_dir, shown_path
from optnet.spec.inherit import inherit
from optnet.spec.models import BoardDesc
from optnet.spec.names import check_identifier
from optnet.spec.source import InputError, SourceMap, load_yaml, read_source
from optnet.spec.validate import did_you_mean, validate_model

__all__ = ["BoardLibrary", "load_board_file", "load_library"]

_PIN_KEYS = ("tx_p", "tx_n", "rx_p", "rx_n")


@dataclass(frozen=True)
class _RawBoard:
    path: Path
    data: dict
    smap: SourceMap


@dataclass
class BoardLibrary:
    """Boards by name, and the diagnostics found while loading them."""

    boards: dict[str, BoardDesc] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def suggest(self, name: str) -> str:
        """A did-you-mean sentence for an unknown board name."""
        return did_you_mean(name, self.boards)


def _read(path: Path, display: str) -> tuple[_RawBoard | None, list[Diagnostic]]:
    try:
        data, smap, diags = load_yaml(read_source(path, display), display)
    except InputError as exc:
        return None, [Diagnostic("E001", f"The board file cannot be read: {exc.reason}",
                                 Location(display))]
    except DiagnosticError as exc:
        return None, exc.diagnostics
    if not isinstance(data, dict):
        return None, [*diags, Diagnostic("E005", "A board file must be a mapping of keys to "
                                         "values.", Location(display, 1, 1))]
    return _RawBoard(path, data, smap), diags


def _board_checks(board: BoardDesc, smap: SourceMap, stem: str) -> list[Diagnostic]:
    # The board's name (and file name) reaches output folder names, comments of Tcl
    # scripts and Makefiles and the cabling plan.
    diags = check_identifier(board.name, "board name", smap.at(("name",)))
    if board.name != stem:
        diags.append(Diagnostic("E030", f"The board file {stem}.yaml names its board "
                                f"'{board.name}'; the name must match the file name.",
                                smap.at(("name",))))
    used: dict[str, tuple] = {}

    def claim(pin: str | None, path: tuple) -> None:
        if not pin:
            return
        if pin in used:
            diags.append(Diagnostic(
                "E030", f"Board '{board.name}' uses pin or site {pin} twice: at "
                f"{_dotted(used[pin])} and at {_dotted(path)}.", smap.at(path)))
        else:
            used[pin] = path

    diags += _iostandard_words(board, smap)
    for cname, clock in board.clocks.items():
        diags += check_identifier(cname, f"clock name on board '{board.name}'",
                                  smap.at(("clocks", cname), key=True))
        for key in ("pin", "p", "n"):
            claim(getattr(clock, key), ("clocks", cname, key))
    refclks: set[tuple] = set()
    for pname, port in board.ports.items():
        where = ("ports", pname)
        diags += check_identifier(pname, f"port name on board '{board.name}'",
                                  smap.at(where, key=True))
        if port.kind == "serial" and board.transceivers is None:
            diags.append(Diagnostic(
                "E030", f"Port '{pname}' of board '{board.name}' is a serial port, but the "
                "board lists no transceivers.", smap.at((*where, "kind"))))
        for i, lane in enumerate(port.lanes):
            lane_path = (*where, "lanes", i)
            if port.kind == "serial" and board.vendor == "xilinx" and not lane.site:
                diags.append(Diagnostic(
                    "E030", f"Lane {i} of port '{pname}' of board '{board.name}' has no "
                    "transceiver site; Xilinx constraints place channels by site.",
                    smap.at(lane_path)))
            if port.kind == "parallel" and port.verified \
                    and not all(getattr(lane, k) for k in _PIN_KEYS):
                diags.append(Diagnostic(
                    "E030", f"Lane {i} of parallel port '{pname}' of board '{board.name}' "
                    "needs all four pins tx_p, tx_n, rx_p and rx_n (or the port must be "
                    "marked 'verified: false').", smap.at(lane_path)))
            claim(lane.site, (*lane_path, "site"))
            for key in _PIN_KEYS:
                claim(getattr(lane, key), (*lane_path, key))
        if port.kind == "parallel" and port.verified and port.clock is None:
            diags.append(Diagnostic(
                "E030", f"Parallel port '{pname}' of board '{board.name}' needs 'clock' "
                "with its forwarded clock pins.", smap.at(where)))
        if port.clock:
            for key in _PIN_KEYS:
                claim(getattr(port.clock, key), (*where, "clock", key))
        # Ports sharing one reference clock list its control pins each; claim them once.
        if port.refclk and (port.refclk.p, port.refclk.n) not in refclks:
            refclks.add((port.refclk.p, port.refclk.n))
            for k, drive in enumerate(port.refclk.drive):
                claim(drive.pin, (*where, "refclk", "drive", k, "pin"))
        if port.onboard and port.onboard.peer_port not in board.ports:
            diags.append(Diagnostic(
                "E030", f"Port '{pname}' of board '{board.name}' is wired to peer port "
                f"'{port.onboard.peer_port}', which the board does not have."
                f"{did_you_mean(port.onboard.peer_port, board.ports)}",
                smap.at((*where, "onboard", "peer_port"))))
    return diags


def _iostandard_words(board: BoardDesc, smap: SourceMap) -> list[Diagnostic]:
    """E030 for an I/O standard of several words on a board whose vendor names them with
    one (Quartus has "1.8 V"; UCF and LPF could not even quote the space)."""
    if board.vendor == "intel":
        return []
    places = [(("clocks", n, "iostandard"), c.iostandard) for n, c in board.clocks.items()]
    places += [(("leds", "iostandard"), board.leds.iostandard if board.leds else None)]
    for n, port in board.ports.items():
        places += [(("ports", n, "iostandard"), port.iostandard),
                   (("ports", n, "rx_iostandard"), port.rx_iostandard)]
    return [Diagnostic("E030", f"The I/O standard '{std}' at {_dotted(path)} of board "
                       f"'{board.name}' has a space; {board.vendor} I/O standards are one "
                       f"word (LVDS_25, LVCMOS33).", smap.at(path))
            for path, std in places if std and " " in std]


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


def load_library(dirs: Iterable[Path]) -> BoardLibrary:
    """Load every ``*.yaml`` board in ``dirs``; a later directory's board replaces an
    earlier one of the same name.

    Parameters
    ----------
    dirs : iterable of Path
        Directories to read; ones that do not exist are skipped.

    Returns
    -------
    BoardLibrary
        Every board that validated, plus diagnostics (codes E0xx, E030) for every board that
        did not; a broken board never stops the others from loading. Results are cached
        until a file in ``dirs`` changes.
    """
    stamp = []
    for directory in dirs:
        files = sorted(directory.glob("*.yaml")) if directory.is_dir() else []
        stamp.append((str(directory.resolve()), tuple(_stamp(f) for f in files)))
    cached = _load_library(tuple(stamp), Path.cwd())
    return BoardLibrary(dict(cached.boards), dict(cached.files), list(cached.diagnostics))


def _stamp(path: Path) -> tuple:
    # A dangling link or an unreadable entry still takes part (the reader reports it).
    try:
        st = path.stat()
    except OSError:
        return (path.name, None, None)
    return (path.name, st.st_mtime_ns, st.st_size, st.st_mode)


@functools.lru_cache(maxsize=16)
def _load_library(stamp: tuple, _cwd: Path) -> BoardLibrary:
    # _cwd is part of the key because diagnostics name files relative to it.
    library = BoardLibrary()
    raws: dict[str, _RawBoard] = {}
    for text, _ in stamp:
        directory = Path(text)
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.yaml")):
            display = shown_path(path)
            raw, diags = _read(path, display)
            library.diagnostics += diags
            if raw is not None:
                raws[path.stem] = raw
    for name in sorted(raws):
        raw = raws[name]
        try:
            data, smap = inherit(raw.data, raw.smap, "extends", "board",
                                 {n: (r.data, r.smap) for n, r in raws.items()}, (name,))
        except DiagnosticError as exc:
            library.diagnostics += exc.diagnostics
            continue
        board, diags = validate_model(BoardDesc, data, smap)
        if board is not None:
            diags += _board_checks(board, smap, name)
        library.diagnostics += diags
        if board is not None and not any(d.severity.value == "error" for d in diags):
            library.boards[name] = board
            library.files[name] = raws[name].path
    return library


def load_board_file(path: Path) -> BoardLibrary:
    """Load one board file (with the built-in library and its own directory available for
    ``extends:``); diagnostics concern only that file."""
    library = load_library([data_dir("boards"), path.parent])
    own = shown_path(path)
    library.diagnostics = [d for d in library.diagnostics
                           if d.location is None or d.location.file == own]
    return library

