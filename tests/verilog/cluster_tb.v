// Event-driven simulation of the emitted Verilog of a whole optnet cluster: every node's
// top module, its LVDS/DDR pads cabled to its peers' (tests/verilog/ecp5_io_models.v
// stands in for the I/O primitives), and one axis_traffic driver per endpoint.
//
// The cluster-specific part (clocks, resets, node instances, cabling, drivers) is
// written by tests/test_verilog_cluster.py into cluster_nodes.vh, which this file
// includes; that part provides
//     UNITS, NODES, LINKS                    (localparams)
//     tb_clk, tb_rst                         monitor clock (a network clock), all resets
//     copies_sent_all, received_all          [32 * UNITS] per-driver counters
//     done_all                               [UNITS] driver schedule exhausted
//     link_up_all, dropped_all               [LINKS], [16 * NODES]
//     task report_state                      prints the state of every node and driver
// This file only watches progress: it ends the run when every expected copy has arrived
// (after a settling time in which any duplicate would show), when nothing has arrived
// for too long while copies are missing (a deadlock), or at a hard cycle limit. The
// per-packet checks are done in Python from the drivers' logs.
//
// Plusargs: +expected=N copies in all (required), +stall=N cycles without a delivery
// that count as a deadlock (default 10000), +max_cycles=N (default 5000000),
// +settle=N cycles to wait after the last copy (default 1000).

`timescale 1ns / 1fs
// A misspelt signal in the generated part must not become an implicit one-bit wire.
`default_nettype none

module cluster_tb;
    `include "cluster_nodes.vh"

    integer expected, stall_limit, max_cycles, settle;
    integer total, sent, last_total, idle, settling, i;
    integer link_drops = 0;
    integer all_up_cycle = -1;
    reg all_done;
    reg all_up_seen = 1'b0;
    reg [LINKS-1:0] link_up_prev = 0;
    reg [63:0] cycle = 0;

    initial begin
        if (!$value$plusargs("expected=%d", expected)) begin
            $display("ERROR: +expected=N is required");
            $finish;
        end
        if (!$value$plusargs("stall=%d", stall_limit)) stall_limit = 10000;
        if (!$value$plusargs("max_cycles=%d", max_cycles)) max_cycles = 5000000;
        if (!$value$plusargs("settle=%d", settle)) settle = 1000;
        last_total = 0;
        idle = 0;
        settling = -1;
    end

    task summary(input [8*16-1:0] verdict);
        begin
            $display("SUMMARY cycle=%0d time_us=%0.1f delivered=%0d expected=%0d sent_copies=%0d",
                     cycle, $realtime / 1000.0, total, expected, sent);
            $display("SUMMARY outstanding_in_network=%0d not_yet_delivered=%0d",
                     sent - total, expected - total);
            $display("SUMMARY links_up_cycle=%0d link_drops=%0d", all_up_cycle, link_drops);
            report_state;
            $display("RESULT %0s", verdict);
        end
    endtask

    always @(posedge tb_clk) begin
        cycle <= cycle + 1;
        total = 0;
        sent = 0;
        all_done = 1'b1;
        for (i = 0; i < UNITS; i = i + 1) begin
            total = total + received_all[32 * i +: 32];
            sent = sent + copies_sent_all[32 * i +: 32];
            all_done = all_done & done_all[i];
        end
        // A link that goes down after the whole cluster was up means the PHY lost lock:
        // with ideal wires that is a testbench (sampling) or PHY problem worth reporting.
        if (&link_up_all && !all_up_seen) begin
            all_up_seen = 1'b1;
            all_up_cycle = cycle;
        end
        // (A loop: Icarus 11's $countones miscounts an expression such as a & ~b.)
        if (all_up_seen)
            for (i = 0; i < LINKS; i = i + 1)
                if (link_up_prev[i] && !link_up_all[i]) link_drops = link_drops + 1;
        link_up_prev <= link_up_all;
        if (tb_rst || total != last_total) idle = 0;
        else idle = idle + 1;
        last_total = total;
        if (total > expected) begin
            summary("EXTRA");
            $finish;
        end
        if (total == expected && all_done) begin
            if (settling < 0) settling = settle;
            else if (settling == 0) begin
                summary("DONE");
                $finish;
            end else settling = settling - 1;
        end
        if (idle > stall_limit) begin
            $display("DEADLOCK: no delivery for %0d cycles; %0d copies in the network, ",
                     idle, sent - total, "%0d of %0d not delivered", expected - total,
                     expected);
            summary("DEADLOCK");
            $finish;
        end
        if (cycle >= max_cycles) begin
            summary("TIMEOUT");
            $finish;
        end
    end
endmodule

// Back to the default for the files compiled after this one (the generated design).
`default_nettype wire
