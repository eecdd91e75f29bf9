# Mock Vivado for tests/test_emit_projects.py (see mock_common.tcl).
source [file join [file dirname [info script]] mock_common.tcl]

set mock_project ""
set mock_project_dir ""
set mock_top ""
set mock_part ""
array set mock_ips {}

proc create_project {args} {
    set rest {}
    for {set i 0} {$i < [llength $args]} {incr i} {
        set a [lindex $args $i]
        switch -- $a {
            -force {}
            -part {incr i; set ::mock_part [lindex $args $i]}
            default {lappend rest $a}
        }
    }
    lassign $rest name dir
    if {$dir eq ""} {
        # As Vivado: the project goes into the working directory (Edalize's project script).
        set dir [pwd]
    }
    set ::mock_project $name
    set ::mock_project_dir [file normalize $dir]
    mock_record create_project $name [mock_output $dir] $::mock_part
}

proc current_project {args} { return $::mock_project }
proc get_filesets {name} { return $name }
proc current_fileset {} { return sources_1 }

proc add_files {args} {
    set fileset sources_1
    set files {}
    for {set i 0} {$i < [llength $args]} {incr i} {
        set a [lindex $args $i]
        switch -- $a {
            -norecurse {}
            -fileset {incr i; set fileset [lindex $args $i]}
            default {foreach f $a {lappend files $f}}
        }
    }
    foreach f $files {
        mock_record add_files $fileset [mock_input $f]
    }
}

proc read_xdc {path} { mock_record read_xdc [mock_input $path] }
proc read_verilog {path} { mock_record read_verilog [mock_input $path] }

proc set_property {args} {
    if {[lindex $args 0] eq "-dict"} {
        set pairs [lindex $args 1]
        set object [lindex $args 2]
        foreach {key value} $pairs {
            mock_record set_property $object $key $value
            if {[info exists ::mock_ips($object)]} {
                dict set ::mock_ips($object) $key $value
            }
        }
        return
    }
    lassign $args key value object
    if {$key eq "top"} {
        set ::mock_top $value
    }
    if {$key eq "part" && $object eq $::mock_project} {
        set ::mock_part $value
    }
    mock_record set_property $object $key $value
}

proc create_ip {args} {
    if {$::mock_project eq ""} {
        mock_fail "create_ip without an open project"
    }
    if {$::mock_part eq ""} {
        mock_fail "create_ip in project $::mock_project, which has no part"
    }
    array set opt $args
    set name $opt(-module_name)
    if {[info exists ::mock_ips($name)]} {
        mock_fail "IP $name is created twice"
    }
    set ::mock_ips($name) [dict create]
    mock_record create_ip $opt(-name) $opt(-vendor) $opt(-library) $name
}

proc get_ips {name} {
    if {![info exists ::mock_ips($name)]} {
        mock_fail "get_ips: no IP $name"
    }
    return $name
}

# The IP's generated top-level Verilog: the lint stub's ports (mock_ip_verilog), with the user
# data buses as wide as the recorded customisation makes them: 64 bits a lane (Aurora
# 64B/66B) or 8 x C_LANE_WIDTH bits a lane.
proc mock_ip_file {ip} {
    return [file join $::mock_project_dir $::mock_project.srcs sources_1 ip $ip $ip.v]
}

proc generate_target {what ips} {
    foreach ip $ips {
        set cfg $::mock_ips($ip)
        set lanes [dict get $cfg CONFIG.C_AURORA_LANES]
        if {[dict exists $cfg CONFIG.C_LANE_WIDTH]} {
            set width [expr {8 * [dict get $cfg CONFIG.C_LANE_WIDTH] * $lanes}]
        } else {
            set width [expr {64 * $lanes}]
        }
        mock_touch [mock_ip_file $ip] \
            [mock_ip_verilog $ip 1995 [dict create s_axi_tx_tdata $width m_axi_rx_tdata $width]]
        mock_record generate_target $what $ip
    }
}

proc get_files {args} {
    set ip [lindex $args end]
    if {[info exists ::mock_ips($ip)] && [file exists [mock_ip_file $ip]]} {
        return [list [mock_ip_file $ip]]
    }
    return {}
}

proc update_compile_order {args} { mock_record update_compile_order {*}$args }

proc get_runs {name} { return $name }

proc mock_run_dir {run} {
    return [file join $::mock_project_dir $::mock_project.runs $run]
}

proc launch_runs {run args} {
    mock_record launch_runs $run {*}$args
    if {$run eq "impl_1"} {
        mock_touch [file join [mock_run_dir impl_1] $::mock_top.bit] bitstream
    }
}

proc wait_on_run {run} { mock_record wait_on_run $run }

proc get_property {key object} {
    switch -- $key {
        PROGRESS {return 100%}
        DIRECTORY {return [mock_run_dir $object]}
        STATS.WNS {return 0.125}
        default {mock_fail "get_property $key is not mocked"}
    }
}

proc open_run {run} { mock_record open_run $run }

proc mock_report {command args} {
    set path [lindex $args [expr {[lsearch -exact $args -file] + 1}]]
    set rel [mock_output $path]
    mock_touch $path report
    mock_record $command $rel
}

proc report_timing_summary {args} { mock_report report_timing_summary {*}$args }
proc report_utilization {args} { mock_report report_utilization {*}$args }

mock_run
