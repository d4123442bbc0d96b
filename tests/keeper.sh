# SPDX-License-Identifier: MIT
# Sourced by the shell tests of 'vmstack run' and 'trace'.
# keeper_run ERRFILE CMD...: runs CMD with its stderr into ERRFILE and returns its status once
# every writer of that stderr is done, the program's keeper included: after a fatal signal the
# keeper writes the table (to stderr or --output) a moment after the program has ended, and a
# pipe's reader ends only with its last writer.
keeper_run() {
    kr_err=$1; shift
    # The subshell sets its own descriptors: dash reports a child's death by a signal ("Aborted")
    # on the stderr in force while it waits, which is /dev/null here.
    { { (exec 2>&1 1>&3 3>&-; exec "$@"); echo $? > "$kr_err.rc"; } 2> /dev/null | cat > "$kr_err"; } 3>&1
    kr_rc=$(cat "$kr_err.rc"); rm -f "$kr_err.rc"
    return "$kr_rc"
}
