# Mock ISE xtclsh (project, xfile, process) and CORE Generator for
# tests/test_emit_projects.py (see mock_common.tcl).
source [file join [file dirname [info script]] mock_common.tcl]

set mock_top ""

proc project {sub args} {
    switch -- $sub {
        new {
            mock_touch [file normalize [lindex $args 0]] xise
            mock_record project new [mock_output [lindex $args 0]]
        }
        set {
            lassign $args key value
            if {$key eq "top"} {
                set ::mock_top $value
            }
            mock_record project set $key $value
        }
        close {mock_record project close}
        default {mock_fail "project $sub is not mocked"}
    }
}

set mock_xfiles {}

proc xfile {sub path args} {
    switch -- $sub {
        add {
            lappend ::mock_xfiles [file tail $path]
            mock_record xfile add [mock_input $path]
        }
        get {
            # Edalize's xfile_add_exist_ok: an error for a file not in the project.
            if {[lsearch -exact $::mock_xfiles $path] < 0} {
                error "file $path is not in the project"
            }
            return $path
        }
        default {mock_fail "xfile $sub is not mocked"}
    }
}

proc process {sub name args} {
    switch -- $sub {
        run {
            mock_record process run $name
            switch -- $name {
                "Generate Programming File" {mock_touch [file join [pwd] $::mock_top.bit] bit}
                "Generate Post-Place & Route Static Timing" {
                    mock_touch [file join [pwd] $::mock_top.twr] twr
                }
            }
        }
        get {
            # The status of the last run: MOCK_ISE_STATUS, or up_to_date (a clean run).
            if {[info exists ::env(MOCK_ISE_STATUS)]} {
                return $::env(MOCK_ISE_STATUS)
            }
            return up_to_date
        }
        default {mock_fail "process $sub is not mocked"}
    }
}

# exec: only CORE Generator in batch mode. Logs the SELECT and every CSET of the .xco and
# writes <component_name>/src/<component_name>.v next to the .xco, with the lint stub's ports
# (mock_ip_verilog).
rename exec mock_real_exec
proc exec {args} {
    if {[lindex $args 0] ne "coregen"} {
        mock_fail "exec [lindex $args 0] is not mocked"
    }
    array set opt [lrange $args 1 4]
    mock_input $opt(-p)
    set fh [open $opt(-b)]
    set lines [split [read $fh] \n]
    close $fh
    mock_record coregen [mock_input $opt(-p)] [mock_input $opt(-b)]
    set name ""
    foreach line $lines {
        if {[regexp {^SELECT (.*)$} $line -> select]} {
            mock_record coregen_select $select
        } elseif {[regexp {^CSET ([^=]+)=(.*)$} $line -> key value]} {
            mock_record coregen_cset $key $value
            if {$key eq "component_name"} {
                set name $value
            }
        }
    }
    if {$name eq ""} {
        mock_fail "the .xco sets no component_name"
    }
    mock_touch [file join [file dirname $opt(-b)] $name src $name.v] [mock_ip_verilog $name 1995]
}

mock_run
