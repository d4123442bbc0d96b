# SPDX-License-Identifier: MIT
# One function per kind of test, with which tests/CMakeLists.txt and
# tests/compat/CMakeLists.txt declare every test.  Tests must pass in both
# guard modes (CI runs the suite again with VMSTACK_GUARD=mprotect) and
# under ASan+UBSan (VMS_SANITIZE=address); label concurrent ones "threads"
# so that the ThreadSanitizer build runs them.  A test that sets
# VMSTACK_GUARD itself (most come in pairs, one per mode) is labelled
# "guardmode": it would run the same again in the mprotect pass, which
# leaves it out (-LE guardmode).
#
# Each takes the test's properties: TIMEOUT seconds, LABELS, ENV (its
# ENVIRONMENT), SKIP (the exit code that means skipped), DEPENDS (tests).

# Sanitizers' own SIGSEGV handlers off, for tests that expect the signal: "dies by SIGSEGV as without
# vmstack" then means the same with and without them.
set(VMS_NO_SEGV "ASAN_OPTIONS=handle_segv=0;TSAN_OPTIONS=handle_segv=0")

# vms_default(VAR VALUE...): VAR is VALUE unless set.
macro(vms_default var)
  if(NOT ${var})
    set(${var} ${ARGN})
  endif()
endmacro()

function(vms_test_properties name)
  cmake_parse_arguments(P "" "TIMEOUT;SKIP" "LABELS;ENV;DEPENDS" ${ARGN})
  foreach(p TIMEOUT LABELS DEPENDS)
    if(P_${p})
      set_tests_properties(${name} PROPERTIES ${p} "${P_${p}}")
    endif()
  endforeach()
  if(P_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${P_ENV}")
  endif()
  if(P_SKIP)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${P_SKIP})
  endif()
endfunction()

# vms_test_program(NAME SRC... [LIBS lib...]): a test's program from its sources, against the static
# library and with the internal headers.
function(vms_test_program name)
  cmake_parse_arguments(P "" "" "LIBS" ${ARGN})
  add_executable(${name} ${P_UNPARSED_ARGUMENTS})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests
                                             ${PROJECT_SOURCE_DIR}/tools)
  target_link_libraries(${name} PRIVATE vmstack_static ${P_LIBS})
endfunction()

# vms_c_test(NAME [SRC...] [ARGS arg...] [LIBS lib...] [LINK_OPTIONS opt...] [MPROTECT] properties):
# tests/NAME from its sources (default NAME.c), run as NAME ARGS, 300 s unless TIMEOUT says.
# MPROTECT adds NAME_mprotect, the same with VMSTACK_GUARD=mprotect (label guardmode).
# vms_c_tests(NAME... [LIBS lib...] properties): one vms_c_test each, from NAME.c.
function(vms_c_test name)
  cmake_parse_arguments(T "MPROTECT" "TIMEOUT" "ARGS;LIBS;LINK_OPTIONS;LABELS;ENV" ${ARGN})
  vms_default(T_UNPARSED_ARGUMENTS ${name}.c)
  vms_test_program(${name} ${T_UNPARSED_ARGUMENTS} LIBS ${T_LIBS})
  target_link_options(${name} PRIVATE ${T_LINK_OPTIONS})
  vms_default(T_TIMEOUT 300)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  vms_test_properties(${name} TIMEOUT ${T_TIMEOUT} LABELS ${T_LABELS} ENV ${T_ENV})
  if(T_MPROTECT)
    add_test(NAME ${name}_mprotect COMMAND ${name} ${T_ARGS})
    vms_test_properties(${name}_mprotect TIMEOUT ${T_TIMEOUT} LABELS ${T_LABELS} guardmode
                        ENV VMSTACK_GUARD=mprotect ${T_ENV})
  endif()
endfunction()

function(vms_c_tests)
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS;LIBS" ${ARGN})
  foreach(t ${T_UNPARSED_ARGUMENTS})
    vms_c_test(${t} TIMEOUT ${T_TIMEOUT} LABELS ${T_LABELS} LIBS ${T_LIBS})
  endforeach()
endfunction()

# vms_mode_test(BIN CASES case... [SRC file...] [LIBS lib...] [ARGS arg...] [ENV var...] properties):
# BIN from SRC (default BIN.c) as vms_test_program builds it, and one test per case in each guard
# mode, BIN_CASE (the start-up probe's choice, VMSTACK_GUARD=auto) and BIN_CASE_mprotect, labelled
# guardmode, run as BIN CASE ARGS with ENV (default: VMS_NO_SEGV), 300 s unless TIMEOUT says.
function(vms_mode_test bin)
  cmake_parse_arguments(T "" "TIMEOUT" "CASES;ARGS;LABELS;ENV;SRC;LIBS" ${ARGN})
  vms_default(T_TIMEOUT 300)
  vms_default(T_SRC ${bin}.c)
  vms_default(T_ENV ${VMS_NO_SEGV})
  vms_test_program(${bin} ${T_SRC} LIBS ${T_LIBS})
  foreach(c ${T_CASES})
    foreach(mode auto mprotect)
      set(name ${bin}_${c})
      if(mode STREQUAL "mprotect")
        set(name ${name}_mprotect)
      endif()
      add_test(NAME ${name} COMMAND ${bin} ${c} ${T_ARGS})
      vms_test_properties(${name} TIMEOUT ${T_TIMEOUT} LABELS ${T_LABELS} guardmode
                          ENV VMSTACK_GUARD=${mode} ${T_ENV})
    endforeach()
  endforeach()
endfunction()

# vms_shell_test(NAME ARG... [SCRIPT file] [CASES case...] [EXEC] properties): sh SCRIPT ARGs, SCRIPT
# (default NAME.sh) from this folder; EXEC runs SCRIPT itself (its #! line).  With CASES, one test
# NAME_CASE per case, run as SCRIPT CASE ARGs.
function(vms_shell_test name)
  cmake_parse_arguments(T "EXEC" "SCRIPT;TIMEOUT;SKIP" "CASES;LABELS;ENV;DEPENDS" ${ARGN})
  vms_default(T_SCRIPT ${name}.sh)
  set(run sh ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT})
  if(T_EXEC)
    set(run ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT})
  endif()
  set(props TIMEOUT ${T_TIMEOUT} SKIP ${T_SKIP} LABELS ${T_LABELS} ENV ${T_ENV} DEPENDS ${T_DEPENDS})
  if(NOT T_CASES)
    add_test(NAME ${name} COMMAND ${run} ${T_UNPARSED_ARGUMENTS})
    vms_test_properties(${name} ${props})
  endif()
  foreach(c ${T_CASES})
    add_test(NAME ${name}_${c} COMMAND ${run} ${c} ${T_UNPARSED_ARGUMENTS})
    vms_test_properties(${name}_${c} ${props})
  endforeach()
endfunction()

# vms_plain_program(NAME [SRC file...] [LIBS lib...] [LINK_OPTIONS opt...]): a program built as
# users build theirs, never sanitized: the preload library is not sanitized either, and a
# sanitized program could not take it.  SRC defaults to NAME.c.
function(vms_plain_program name)
  cmake_parse_arguments(P "" "" "SRC;LIBS;LINK_OPTIONS" ${ARGN})
  vms_default(P_SRC ${name}.c)
  add_executable(${name} ${P_SRC})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_compile_options(${name} PRIVATE -fno-sanitize=all)
  target_link_options(${name} PRIVATE -fno-sanitize=all ${P_LINK_OPTIONS})
  target_link_libraries(${name} PRIVATE ${P_LIBS})
endfunction()
