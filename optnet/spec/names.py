"""Names that become Verilog modules, file names and C identifiers."""

from __future__ import annotations

import re

from optnet.diagnostics import Diagnostic, Location

__all__ = ["MAX_NAME", "check_identifier"]

MAX_NAME = 64
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Verilog-2005, SystemVerilog and VHDL-2008 keywords that a plain identifier could collide
# with, plus C keywords (names reach the routes.h header).
_RESERVED = frozenset("""
always and assign automatic begin buf bufif0 bufif1 case casex casez cell cmos config deassign
default defparam design disable edge else end endcase endconfig endfunction endgenerate
endmodule endprimitive endspecify endtable endtask event for force forever fork function
generate genvar highz0 highz1 if ifnone incdir include initial inout input instance integer
join large liblist library localparam macromodule medium module nand negedge nmos nor
noshowcancelled not notif0 notif1 or output parameter pmos posedge primitive pull0 pull1
pulldown pullup pulsestyle_onevent pulsestyle_ondetect rcmos real realtime reg release repeat
rnmos rpmos rtran rtranif0 rtranif1 scalared showcancelled signed small specify specparam
strong0 strong1 supply0 supply1 table task time tran tranif0 tranif1 tri tri0 tri1 triand
trior trireg unsigned use uwire vectored wait wand weak0 weak1 while wire wor xnor xor
bit byte logic int shortint longint class interface package program property sequence struct
union enum typedef void return break continue import export extends static virtual
abs access after alias all architecture array assert attribute block body buffer bus
component configuration constant disconnect downto elsif entity exit file group guarded
impure in inertial is label linkage literal loop map mod new next null of on open others out
port postponed procedure process pure range record register reject rem report rol ror select
severity shared signal sla sll sra srl subtype then to transport type units until variable
auto char const double extern float goto long short sizeof switch unsigned volatile
""".split())
_DEVICES = frozenset(["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)]
                     + [f"lpt{i}" for i in range(10)])


def check_identifier(name: object, what: str, location: Location | None) -> list[Diagnostic]:
    """Diagnostics (E020) if ``name`` cannot serve as an HDL identifier and a file name.

    Parameters
    ----------
    name : object
        The name as written.
    what : str
        What carries the name, for the message ("node '../x'", "cluster name").
    location : Location or None
    """
    text = str(name)
    reason = None
    # fullmatch: match with a $ anchor would accept a trailing newline.
    if not _IDENT.fullmatch(text):
        reason = ("it must start with a letter and contain only ASCII letters, digits and "
                  "underscores")
    elif len(text) > MAX_NAME:
        reason = f"it is {len(text)} characters long; the limit is {MAX_NAME}"
    elif text.endswith("_") or "__" in text:
        reason = "VHDL forbids a trailing underscore and two underscores in a row"
    elif text.lower() in _RESERVED:
        reason = "it is a Verilog, VHDL or C keyword"
    elif text.lower() in _DEVICES:
        reason = "it is a reserved device name on Windows and cannot name a folder there"
    if reason is None:
        return []
    shown = text if len(text) <= 40 else text[:37] + "..."
    return [Diagnostic("E020", f"The {what} {shown!r} is not a legal name: {reason}.",
                       location, hint="Names become Verilog modules, C identifiers and "
                       "output folder names.")]
