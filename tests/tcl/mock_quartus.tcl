# Mock quartus_sh -t (project and flow packages) with qsys-script and qsys-generate for
# tests/test_emit_projects.py (see mock_common.tcl). qsys-script runs the IP script in a
# child interpreter whose Platform Designer commands are logged as ["qsys", <system>, ...].

set mock_files {}
set mock_revision ""
source [file join [file dirname [info script]] mock_common.tcl]

proc load_package {name} { mock_record load_package $name }

# project_new [-overwrite] [-family F] [-part P] [-revision R] name, options anywhere (Edalize
# writes "project_new name -overwrite").
proc project_new {args} {
    set opts {}
    set name ""
    for {set i 0} {$i < [llength $args]} {incr i} {
        set a [lindex $args $i]
        switch -- $a {
            -overwrite {lappend opts $a}
            -family - -part - -revision {lappend opts $a [lindex $args [incr i]]}
            default {set name $a}
        }
    }
    set ::mock_revision $name
    set ::quartus(project) $name
    mock_touch [file join [pwd] $name.qpf] qpf
    mock_touch [file join [pwd] $name.qsf] qsf
    mock_record project_new {*}$opts [mock_output $name.qpf]
}

proc project_open {args} {
    mock_input [lindex $args end].qpf
    set ::quartus(project) [lindex $args end]
    mock_record project_open {*}$args
}

proc project_close {} {
    unset -nocomplain ::quartus(project)
    mock_record project_close
}

proc is_project_open {} { return [info exists ::quartus(project)] }
proc export_assignments {} { mock_record export_assignments }

proc set_global_assignment {dash name value args} {
    if {$name in {VERILOG_FILE SYSTEMVERILOG_FILE SDC_FILE IP_FILE QSYS_FILE}} {
        # Checked when the flow reads them: IP files only exist once generated.
        lappend ::mock_files [file normalize $value]
        mock_record set_global_assignment $name [mock_output $value]
    } else {
        mock_record set_global_assignment $name $value {*}$args
    }
}

proc set_location_assignment {args} { mock_record set_location_assignment {*}$args }
proc set_instance_assignment {args} { mock_record set_instance_assignment {*}$args }

proc execute_flow {args} {
    foreach f $::mock_files {
        mock_input $f
    }
    mock_record execute_flow {*}$args
    foreach ext {sta.rpt sta.summary fit.summary sof} {
        mock_touch [file join [pwd] output_files $::mock_revision.$ext] \
            "Type  : Setup 'clk'\nSlack : 0.250\n"
    }
}

# Platform Designer commands inside qsys-script.
proc mock_qsys {system cmd args} {
    mock_record qsys $system $cmd {*}$args
    if {$cmd eq "save_system"} {
        mock_touch [file normalize [lindex $args 0]] "<ip/>\n"
        mock_record qsys_saved [mock_output [lindex $args 0]]
    }
}

rename exec mock_real_exec
proc exec {args} {
    set tool [lindex $args 0]
    set opts {}
    set plain {}
    foreach a [lrange $args 1 end] {
        if {[regexp {^--([^=]+)=(.*)$} $a -> key value]} {
            dict set opts $key $value
        } elseif {$a ni {>@ 2>@ stdout stderr}} {
            lappend plain $a
        }
    }
    mock_input [dict get $opts quartus-project]
    switch -- $tool {
        qsys-script {
            set script [dict get $opts script]
            mock_record qsys-script [mock_input $script]
            set q [interp create]
            $q eval {package provide qsys 1.0}
            $q eval {set mock_system ""}
            foreach cmd {create_system set_project_property add_instance
                         set_instance_parameter_value set_instance_property save_system} {
                $q alias $cmd mock_qsys_in $q $cmd
            }
            $q eval [list source $script]
            interp delete $q
        }
        qsys-generate {
            # ip/<name>.ip -> ip/<name>/synth/<name>.v, with the lint stub's ports for link
            # IP (mock_ip_verilog) and none for the PLLs, which have no stub.
            set ip [lindex $plain 0]
            mock_record qsys-generate [mock_input $ip] [dict get $opts synthesis]
            set name [file rootname [file tail $ip]]
            set stubs [file join $::mock_node stubs]
            if {[info exists ::env(MOCK_STUBS)]} {
                set stubs $::env(MOCK_STUBS)
            }
            if {[file exists [file join $stubs $name.v]]} {
                set text [mock_ip_verilog $name ansi]
            } else {
                set text "module $name;\nendmodule\n"
            }
            mock_touch [file join [file rootname $ip] synth $name.v] $text
        }
        default {mock_fail "exec $tool is not mocked"}
    }
}

proc mock_qsys_in {q cmd args} {
    if {$cmd eq "create_system"} {
        $q eval [list set mock_system [lindex $args 0]]
    }
    mock_qsys [$q eval {set mock_system}] $cmd {*}$args
}

mock_run
