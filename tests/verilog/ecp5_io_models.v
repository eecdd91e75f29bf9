// Behavioural simulation models of the four ECP5 I/O primitives that optnet's LVDS/DDR PHY
// instantiates (optnet/hw/phy/lvds.py): ODDRX1F, IDDRX1F, OLVDS and ILVDS.
//
// Yosys ships only black boxes of the DDR primitives (share/ecp5/cells_bb.v) and maps the
// LVDS buffers onto TRELLIS_IO by techmap, so neither can be simulated; these models
// follow the behaviour the PHY's source relies on (Lattice TN1265, generic x1 DDR):
//
// * ODDRX1F takes D0 and D1 on the rising edge of SCLK, drives D0 while SCLK is high
//   and D1 while it is low.
// * IDDRX1F samples D on a rising edge and on the following falling edge, and presents
//   both samples (Q0 the rising one) on the next rising edge.
//
// RST and GSR are ignored: the PHY ties RST low and relies on its own resets.
// Registers start at zero so that no X reaches the PHY's reset-less receive history.

`timescale 1ns / 1ps

module ODDRX1F (
    input  wire SCLK,
    input  wire RST,
    input  wire D0,
    input  wire D1,
    output wire Q
);
    parameter GSR = "ENABLED";
    reg d0 = 1'b0;
    reg d1 = 1'b0;
    // D1 is moved to a falling-edge register so that Q only changes on clock edges.
    reg d1_fall = 1'b0;
    always @(posedge SCLK) begin
        d0 <= D0;
        d1 <= D1;
    end
    always @(negedge SCLK) d1_fall <= d1;
    assign Q = SCLK ? d0 : d1_fall;
endmodule

module IDDRX1F (
    input  wire D,
    input  wire SCLK,
    input  wire RST,
    output reg  Q0 = 1'b0,
    output reg  Q1 = 1'b0
);
    parameter GSR = "ENABLED";
    reg rise = 1'b0;
    reg fall = 1'b0;
    always @(posedge SCLK) begin
        rise <= D;
        Q0 <= rise;
        Q1 <= fall;
    end
    always @(negedge SCLK) fall <= D;
endmodule

// Differential output buffer: true and complement.
module OLVDS (
    input  wire A,
    output wire Z,
    output wire ZN
);
    assign Z = A;
    assign ZN = ~A;
endmodule

// Differential input buffer. A pair whose two wires agree (a miswired or undriven pair)
// reads as X, so that a wiring mistake in a testbench shows up instead of reading as 0.
module ILVDS (
    input  wire A,
    input  wire AN,
    output wire Z
);
    assign Z = (A ^ AN) === 1'b1 ? A : 1'bx;
endmodule
