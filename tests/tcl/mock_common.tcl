# Shared part of the mock vendor tools: tclsh runs a mock with
#
#   tclsh mock_<tool>.tcl LOG SCRIPT
#
# The mock defines the tool's commands, sources SCRIPT (from whatever the working directory
# is) and writes every call to LOG, one JSON array of strings per line. A command that reads
# a file fails unless the file exists, and every path a command names must lie inside the
# folder of SCRIPT (the node folder): a vendor script has to be self-contained.

set mock_log [lindex $argv 0]
set mock_script [file normalize [lindex $argv 1]]
set mock_node [file dirname $mock_script]
set mock_fh [open $mock_log w]

proc mock_json {s} {
    return "\"[string map [list \\ \\\\ \" \\\" \n \\n \r \\r \t \\t] $s]\""
}

# Append one call to the log.
proc mock_record {args} {
    set items {}
    foreach a $args {
        lappend items [mock_json $a]
    }
    puts $::mock_fh "\[[join $items ,]\]"
    flush $::mock_fh
}

proc mock_fail {message} {
    mock_record MOCK_ERROR $message
    error "mock: $message"
}

# The path relative to the node folder; fails for a path outside it.
proc mock_rel {path} {
    set p [file normalize $path]
    set n [string length $::mock_node]
    if {$p ne $::mock_node && [string range $p 0 $n] ne "$::mock_node/"} {
        mock_fail "path '$path' (as $p) is outside the node folder $::mock_node"
    }
    if {[string first /stubs/ $p] >= 0} {
        mock_fail "lint stub '$path' must not enter a vendor project"
    }
    return [string range $p [expr {$n + 1}] end]
}

# A file the command reads: inside the node folder and present.
proc mock_input {path} {
    set rel [mock_rel $path]
    if {![file exists $path]} {
        mock_fail "file '$path' does not exist (working directory [pwd])"
    }
    return $rel
}

# A file or folder the command writes: inside the node folder.
proc mock_output {path} {
    return [mock_rel $path]
}

proc mock_touch {path {text ""}} {
    file mkdir [file dirname $path]
    set fh [open $path w]
    puts -nonewline $fh $text
    close $fh
}

# Source the script under test; exit 1 with its error on stderr when it fails.
proc mock_run {} {
    set code [catch {uplevel #0 [list source $::mock_script]} err]
    if {$code == 1} {
        mock_record SCRIPT_ERROR $err
        close $::mock_fh
        puts stderr $err
        exit 1
    }
    mock_record SCRIPT_DONE
    close $::mock_fh
    exit 0
}
