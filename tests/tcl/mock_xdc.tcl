# Mock Vivado for the clock constraints of an XDC file (tests/test_cdc.py):
#
#   tclsh mock_xdc.tcl LOG XDC OBJECTS
#
# OBJECTS is a Tcl file that sets the design's objects, as the test found them in its
# netlist: mock_ports (ports, a bus bit by bit), mock_clock_pins (the cell pins whose clocks reach
# flip-flops) and mock_cells (every flip-flop, named as Vivado names them). Object queries
# return tokens (port:<name>, pin:<path>, clock:<name>, or a list of cell names) and fail
# for an object the design does not have; the timing commands log their resolved operands
# (see mock_common.tcl).
source [file join [file dirname [info script]] mock_common.tcl]
source [lindex $argv 2]

set mock_clocks [dict create]

# -opt value pairs and the remaining words of a command's arguments.
proc mock_options {args} {
    set opts [dict create]
    set rest {}
    for {set i 0} {$i < [llength $args]} {incr i} {
        set a [lindex $args $i]
        if {[string index $a 0] eq "-" && ![string is double -strict $a]} {
            if {$a in {-hier -hierarchical -datapath_only -quiet -min}} {
                dict set opts $a 1
            } else {
                incr i
                dict set opts $a [lindex $args $i]
            }
        } else {
            lappend rest $a
        }
    }
    return [list $opts $rest]
}

proc get_ports {name} {
    if {$name ni $::mock_ports} { mock_fail "no port '$name'" }
    return "port:$name"
}

proc get_pins {path} {
    if {$path ni $::mock_clock_pins} { mock_fail "no clock on pin '$path'" }
    return "pin:$path"
}

proc get_clocks {args} {
    lassign [mock_options {*}$args] opts rest
    if {[dict exists $opts -of_objects]} {
        set pin [dict get $opts -of_objects]
        if {![string match pin:* $pin]} { mock_fail "get_clocks -of_objects '$pin'" }
        return "clock:$pin"
    }
    set name [lindex $rest 0]
    if {![dict exists $::mock_clocks $name]} { mock_fail "no clock '$name'" }
    return "clock:$name"
}

proc create_clock {args} {
    lassign [mock_options {*}$args] opts rest
    set port [lindex $rest 0]
    dict set ::mock_clocks [dict get $opts -name] $port
    mock_record create_clock [dict get $opts -name] $port [dict get $opts -period]
}

proc set_property {args} {}

# -filter {IS_SEQUENTIAL && NAME =~ <pattern>}, the only form the constraints use.
proc get_cells {args} {
    lassign [mock_options {*}$args] opts rest
    if {![dict exists $opts -hier] || ![dict exists $opts -filter]} {
        mock_fail "get_cells $args"
    }
    if {![regexp {^IS_SEQUENTIAL && NAME =~ (\S+)$} [dict get $opts -filter] -> pattern]} {
        mock_fail "get_cells -filter [dict get $opts -filter]"
    }
    set found {}
    foreach cell $::mock_cells {
        # Vivado's glob takes brackets literally (bus bits).
        if {[string match [string map {[ \\[ ] \\]} $pattern] $cell]} { lappend found $cell }
    }
    if {$found eq {}} { mock_fail "no flip-flop matches '$pattern'" }
    return $found
}

proc set_max_delay {args} {
    lassign [mock_options {*}$args] opts rest
    if {![dict exists $opts -datapath_only]} { mock_fail "set_max_delay without -datapath_only" }
    mock_record set_max_delay [dict get $opts -from] [dict get $opts -to] {*}$rest
}

proc set_bus_skew {args} {
    lassign [mock_options {*}$args] opts rest
    mock_record set_bus_skew [join [dict get $opts -from] " "] [join [dict get $opts -to] " "] \
        {*}$rest
}

foreach cmd {set_clock_groups set_false_path set_multicycle_path} {
    proc $cmd {args} "mock_fail {$cmd is not expected here}"
}

mock_run
