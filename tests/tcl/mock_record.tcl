# Mock for constraint files (tests/test_injection.py, see mock_common.tcl): every command
# plain tclsh does not know is logged with its arguments and returns a token naming the call,
# so that a nested call such as [get_ports x] stays visible in the outer call's arguments.
# Arguments the vendor tools read as Tcl lists (set_property -dict, get_* patterns) are
# logged element by element, as the tools see them.
source [file join [file dirname [info script]] mock_common.tcl]

# What Quartus' Timing Analyzer runs as; an SDC file may ask (Intel's own skip set_net_delay
# in quartus_syn).
array set TimeQuestInfo {nameofexecutable quartus_sta}

proc unknown {args} {
    set cmd [lindex $args 0]
    set rest [lrange $args 1 end]
    if {$cmd eq "set_property" && [lindex $rest 0] eq "-dict"} {
        set rest [list -dict {*}[lindex $rest 1] {*}[lrange $rest 2 end]]
    } elseif {[string match get_* $cmd]} {
        set flat {}
        foreach a $rest {
            lappend flat {*}$a
        }
        set rest $flat
    }
    mock_record $cmd {*}$rest
    return "<$cmd [join $rest |]>"
}

mock_run
