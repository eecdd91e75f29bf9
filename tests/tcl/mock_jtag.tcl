# Mock JTAG hosts for the JTAG host scripts (tests/test_host_jtag.py): OpenOCD's jtag
# newtap, irscan, drscan and runtest, and quartus_stp's ::quartus::jtag commands, over a
# model of optnet's register bridge (optnet/hw/jtag.py's protocol table): a command shifted
# in with go set is answered after mock_latency polls; captures show the last command's
# data, address, write bit and done. Registers: the dict mock_registers (address -> value),
# writable where mock_writable lists the address. Every call is appended to mock_calls.
#
#   tclsh mock_jtag.tcl LOG DRIVER
#
# sources DRIVER (which sets the model up, sources the script under test and runs
# commands), then writes mock_calls to LOG, one JSON array of strings per line; an error
# is logged as ["ERROR", message].

set mock_calls {}
set mock_latency 2
set mock_state [dict create data 0 addr 0 write 0 wait 0]
set mock_registers [dict create]
set mock_writable {}
set mock_tap_declared {}
set mock_hardware {{USB-BlasterII [1-3]}}
set mock_devices {{@1: 1SM21BH (0x432AC0DD)}}

proc mock_call {args} {
    lappend ::mock_calls $args
}

# The bridge: capture the last command's state, then start a command if go is set.
proc mock_bridge {data addr write go} {
    set s $::mock_state
    set captured [list [dict get $s data] [dict get $s addr] [dict get $s write] \
        [expr {[dict get $s wait] == 0}]]
    if {$go} {
        if {$write} {
            if {$addr in $::mock_writable} {
                dict set ::mock_registers $addr $data
            }
            set value $data
        } elseif {[dict exists $::mock_registers $addr]} {
            set value [dict get $::mock_registers $addr]
        } else {
            set value 0
        }
        set ::mock_state [dict create data $value addr $addr write $write wait $::mock_latency]
    } elseif {[dict get $s wait] > 0} {
        dict incr ::mock_state wait -1
    }
    return $captured
}

# -- OpenOCD -------------------------------------------------------------------------------
proc jtag {args} {
    mock_call jtag {*}$args
    if {[lindex $args 0] eq "newtap"} {
        lappend ::mock_tap_declared "[lindex $args 1].[lindex $args 2]"
    }
}

proc irscan {tap instruction} {
    if {$tap ni $::mock_tap_declared} { error "Tap '$tap' could not be found" }
    mock_call irscan $tap $instruction
}

proc runtest {cycles} {
    mock_call runtest $cycles
}

proc drscan {tap args} {
    if {$tap ni $::mock_tap_declared} { error "Tap '$tap' could not be found" }
    mock_call drscan $tap {*}$args
    if {[llength $args] != 8} { error "drscan fields: $args" }
    set widths {}
    set values {}
    foreach {bits value} $args {
        if {$bits > 32} { error "a drscan field of $bits bits: OpenOCD takes 32 at most" }
        lappend widths $bits
        lappend values [expr {$value + 0}]
    }
    if {$widths ne {32 16 1 1}} { error "drscan field widths $widths" }
    set out {}
    foreach value [mock_bridge {*}$values] bits $widths {
        lappend out [format %0[expr {($bits + 3) / 4}]x $value]
    }
    # OpenOCD prints each field's captured bits as hex digits on a line of its own.
    return [join $out \n]
}

# -- quartus_stp ---------------------------------------------------------------------------
proc package {args} {
    if {$args ne "require ::quartus::jtag"} { error "package $args" }
    mock_call package {*}$args
}

proc get_hardware_names {} { return $::mock_hardware }

proc get_device_names {args} {
    if {$args ne [list -hardware_name [lindex $::mock_hardware 0]]} {
        error "get_device_names $args"
    }
    return $::mock_devices
}

foreach cmd {open_device device_lock device_unlock close_device} {
    proc $cmd {args} "mock_call $cmd {*}\$args"
}

proc device_virtual_ir_shift {args} {
    mock_call device_virtual_ir_shift {*}$args
}

proc device_virtual_dr_shift {args} {
    mock_call device_virtual_dr_shift {*}$args
    set flags [lsearch -all -inline $args -value_in_hex]
    array set opt [lsearch -all -inline -not $args -value_in_hex]
    if {$opt(-length) != 50 || $flags eq ""} { error "dr_shift $args" }
    set value [expr {"0x$opt(-dr_value)" + 0}]
    lassign [mock_bridge [expr {$value & 0xffffffff}] [expr {($value >> 32) & 0xffff}] \
        [expr {($value >> 48) & 1}] [expr {$value >> 49}]] data addr write done
    return [format %013llX [expr {$data | ($addr << 32) | ($write << 48) | ($done << 49)}]]
}

proc mock_json {s} {
    return "\"[string map [list \\ \\\\ \" \\\" \n \\n \t \\t] $s]\""
}

# The script under test sees the arguments after LOG and DRIVER as its own.
set mock_log [lindex $argv 0]
set mock_driver [lindex $argv 1]
set argv [lrange $argv 2 end]
set argc [llength $argv]
if {[catch {source $mock_driver} message]} {
    lappend mock_calls [list ERROR $message]
}
set fh [open $mock_log w]
foreach call $mock_calls {
    set items {}
    foreach a $call {
        lappend items [mock_json $a]
    }
    puts $fh "\[[join $items ,]\]"
}
close $fh
