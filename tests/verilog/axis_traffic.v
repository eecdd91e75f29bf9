// Traffic generator and monitor for one endpoint of one node of a generated optnet cluster
// (tests/test_verilog_cluster.py, tests/verilog/cluster_tb.v).
//
// Send side: plays back a schedule that Python wrote, one AXI4-Stream beat per line,
//     <gap> <tuser> <tdest> <tlast> <tdata in hex>
// where <gap> is the number of idle cycles (tvalid low) before the beat. The schedule is
// read line by line at run time, so one compiled simulation serves every traffic mix, and
// the frame contents are fixed by Python, which checks them at the other end. Every frame
// whose last beat is taken is logged to TX_LOG ("<cycle> <frame>") so a deadlock report
// can tell frames that were sent from frames still waiting at the source.
//
// Receive side: m_axis tready is high with probability +ready_pct=N percent each cycle
// (default 100). Every beat taken is logged to RX_LOG as
// "<cycle> <tid> <tlast> <tdata in hex>".
//
// All outputs change on the rising edge with nonblocking assignments and all inputs are
// sampled there, like the generated design's own registers, so there are no races.

`timescale 1ns / 1ps

module axis_traffic #(
    parameter integer WIDTH = 32,
    parameter integer ID_BITS = 2,
    parameter integer NODES = 4,
    parameter integer INDEX = 0,            // seed offset, distinct per instance
    parameter SCHEDULE = "schedule.txt",
    parameter TX_LOG = "tx.log",
    parameter RX_LOG = "rx.log"
) (
    input  wire               clk,
    input  wire               rst,
    // to the design's <endpoint>_s_axis
    output reg  [WIDTH-1:0]   s_tdata = 0,
    output reg                s_tlast = 1'b0,
    output reg  [ID_BITS-1:0] s_tdest = 0,
    output reg                s_tuser = 1'b0,
    output reg                s_tvalid = 1'b0,
    input  wire               s_tready,
    // from the design's <endpoint>_m_axis
    input  wire [WIDTH-1:0]   m_tdata,
    input  wire               m_tlast,
    input  wire [ID_BITS-1:0] m_tid,
    input  wire               m_tvalid,
    output reg                m_tready = 1'b0,
    // progress counters for the cluster-level checker
    output reg  [31:0]        frames_sent = 0,
    output reg  [31:0]        copies_sent = 0,  // deliveries the sent frames are owed
    output reg  [31:0]        frames_received = 0,
    output reg                done = 1'b0,      // schedule exhausted
    output reg  [63:0]        cycle = 0
);
    integer sched_fd, tx_fd, rx_fd, got, ready_pct, seed;
    integer l_gap, l_user, l_dest, l_last;
    reg [WIDTH-1:0] l_data;
    reg [WIDTH-1:0] n_data;
    reg [ID_BITS-1:0] n_dest;
    reg n_user, n_last;
    reg have_next = 1'b0;
    integer gap_left;
    integer frame;

    initial begin
        sched_fd = $fopen(SCHEDULE, "r");
        if (sched_fd == 0) begin
            $display("ERROR: cannot open %0s", SCHEDULE);
            $finish;
        end
        tx_fd = $fopen(TX_LOG, "w");
        rx_fd = $fopen(RX_LOG, "w");
        if (!$value$plusargs("ready_pct=%d", ready_pct)) ready_pct = 100;
        if (!$value$plusargs("seed=%d", seed)) seed = 1;
        seed = seed * 7919 + INDEX * 104729;
        gap_left = 0;
        frame = 0;
    end

    // Reads the next schedule line into n_*; at the end of the file, sets eof instead.
    reg eof = 1'b0;
    task fetch;
        begin
            got = $fscanf(sched_fd, "%d %d %d %d %h\n", l_gap, l_user, l_dest, l_last, l_data);
            if (got == 5) begin
                have_next = 1'b1;
                gap_left = l_gap;
                n_user = l_user[0];
                n_dest = l_dest[ID_BITS-1:0];
                n_last = l_last[0];
                n_data = l_data;
            end else begin
                have_next = 1'b0;
                eof = 1'b1;
            end
        end
    endtask

    reg started = 1'b0;
    reg hold, offer;

    always @(posedge clk) begin
        cycle <= cycle + 1;
        if (rst) begin
            s_tvalid <= 1'b0;
            m_tready <= 1'b0;
        end else begin
            // -- send ---------------------------------------------------------------------
            if (!started) begin
                started <= 1'b1;
                fetch;
            end
            // AXI4-Stream: a beat once offered stays offered until it is taken.
            hold = s_tvalid && !s_tready;
            offer = hold;
            if (s_tvalid && s_tready) begin
                if (s_tlast) begin
                    $fwrite(tx_fd, "%0d %0d\n", cycle, frame);
                    frame = frame + 1;
                    frames_sent <= frames_sent + 1;
                    copies_sent <= copies_sent + (s_tuser ? NODES - 1 : 1);
                end
                fetch;
            end
            if (!hold) begin
                if (have_next && gap_left == 0) begin
                    s_tdata <= n_data;
                    s_tlast <= n_last;
                    s_tdest <= n_dest;
                    s_tuser <= n_user;
                    have_next = 1'b0;
                    offer = 1'b1;
                end else if (have_next) begin
                    gap_left = gap_left - 1;
                end
            end
            s_tvalid <= offer;
            done <= eof && !offer;
            // -- receive ------------------------------------------------------------------
            if (m_tvalid && m_tready) begin
                $fwrite(rx_fd, "%0d %0d %0d %h\n", cycle, m_tid, m_tlast, m_tdata);
                if (m_tlast) frames_received <= frames_received + 1;
            end
            m_tready <= $unsigned($random(seed)) % 100 < ready_pct;
        end
    end

    // Logs reach the disk before the simulation ends, whichever way it ends.
    always @(posedge clk) if (cycle[9:0] == 0) begin
        $fflush(tx_fd);
        $fflush(rx_fd);
    end
endmodule
