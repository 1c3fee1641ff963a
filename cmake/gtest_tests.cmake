# The GoogleTest binary, flagprop_tests, and its ctest entries, each
# labelled by the folder its test lives in (docs/testing.md): a suite in
# tests/unit/*.cpp is cpu-unit (one part of the code, the inner loop:
# `ctest -L unit`), in tests/teeth/*.cpp cpu-teeth (each property against its
# well-behaved fixture and the mutants it must catch), in tests/e2e/*.cpp
# cpu-e2e (flagprop from the command line); `ctest -L cpu` runs all three.
# One binary for the three kinds (each binary links libtorch): at configure
# time the suite names are read from each folder's files (TEST, TEST_F,
# TEST_P, RC_GTEST_PROP) and make that kind's gtest filter, so a suite
# belongs to one folder only. A new file in a folder, or an edit of one,
# reconfigures (CONFIGURE_DEPENDS). Included from the top-level
# CMakeLists.txt after enable_testing() and the flagprop target.
set(_gt_dir "${CMAKE_CURRENT_SOURCE_DIR}/tests")
set(_gt_kinds unit teeth e2e)
# TIMEOUT: a guard against a hang, not a speed goal; the runs over every
# registered overload take minutes each on a loaded 2-core machine.
set(_gt_timeout_unit 600)
set(_gt_timeout_teeth 1500)
set(_gt_timeout_e2e 1500)
set(_gt_suite_regex "^[ \t]*(TEST|TEST_F|TEST_P|RC_GTEST_PROP)[ \t]*\\([ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*,")

# The suites a file declares, in _gt_suites; those of TEST_P also in
# _gt_param_suites (their entries are named PREFIX/Suite.Name/N).
function(_gt_suites_of file)
  file(STRINGS "${file}" _lines REGEX "${_gt_suite_regex}")
  set(_suites "")
  set(_param "")
  foreach(_line IN LISTS _lines)
    if(NOT _line MATCHES "${_gt_suite_regex}")
      continue()  # a piece of a line that held a ';'
    endif()
    string(REGEX REPLACE "${_gt_suite_regex}.*$" "\\2" _suite "${_line}")
    list(APPEND _suites "${_suite}")
    if(_line MATCHES "^[ \t]*TEST_P")
      list(APPEND _param "${_suite}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _suites)
  list(REMOVE_DUPLICATES _param)
  set(_gt_suites "${_suites}" PARENT_SCOPE)
  set(_gt_param_suites "${_param}" PARENT_SCOPE)
endfunction()

# A test file outside the three folders would be built into no binary and
# get no label.
file(GLOB _gt_loose CONFIGURE_DEPENDS "${_gt_dir}/*.cpp")
foreach(_gt_file IN LISTS _gt_loose)
  _gt_suites_of("${_gt_file}")
  if(_gt_suites)
    file(RELATIVE_PATH _gt_rel "${CMAKE_CURRENT_SOURCE_DIR}" "${_gt_file}")
    message(FATAL_ERROR "flagprop: ${_gt_rel} declares test suite(s) ${_gt_suites}: a test file goes in "
                        "tests/unit, tests/teeth or tests/e2e, whose folder gives its label (docs/testing.md)")
  endif()
endforeach()

set(_gt_sources "${_gt_dir}/main.cpp")
foreach(_gt_kind IN LISTS _gt_kinds)
  file(GLOB _gt_files CONFIGURE_DEPENDS "${_gt_dir}/${_gt_kind}/*.cpp")
  list(SORT _gt_files)
  list(APPEND _gt_sources ${_gt_files})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_gt_files})
  set(_gt_filter_${_gt_kind} "")
  foreach(_gt_file IN LISTS _gt_files)
    file(RELATIVE_PATH _gt_rel "${CMAKE_CURRENT_SOURCE_DIR}" "${_gt_file}")
    _gt_suites_of("${_gt_file}")
    foreach(_gt_suite IN LISTS _gt_suites)
      if(DEFINED _gt_kind_of_${_gt_suite} AND NOT _gt_kind_of_${_gt_suite} STREQUAL _gt_kind)
        message(FATAL_ERROR "flagprop: test suite ${_gt_suite} is in ${_gt_file_of_${_gt_suite}} and in ${_gt_rel}: "
                            "a suite's label comes from its folder, so all of a suite's tests go in one folder "
                            "(docs/testing.md)")
      endif()
      if(NOT DEFINED _gt_kind_of_${_gt_suite})
        set(_gt_kind_of_${_gt_suite} "${_gt_kind}")
        set(_gt_file_of_${_gt_suite} "${_gt_rel}")
        list(APPEND _gt_filter_${_gt_kind} "${_gt_suite}.*")
      endif()
    endforeach()
    foreach(_gt_suite IN LISTS _gt_param_suites)
      list(APPEND _gt_filter_${_gt_kind} "*/${_gt_suite}.*")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES _gt_filter_${_gt_kind})
endforeach()

add_executable(flagprop_tests ${_gt_sources})
target_link_libraries(flagprop_tests PRIVATE flagprop_core GTest::gtest)
target_compile_definitions(flagprop_tests PRIVATE FLAGPROP_BINARY="$<TARGET_FILE:flagprop>"
                                                  FLAGPROP_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(flagprop_tests flagprop)
include(GoogleTest)
# One gtest_discover_tests per kind, over its folder's suites: one label
# each (gtest_discover_tests cannot pass a list). FLAGPROP_DB=off as for every
# other entry (the top-level CMakeLists.txt; tests/main.cpp sets it too).
foreach(_gt_kind IN LISTS _gt_kinds)
  if(NOT _gt_filter_${_gt_kind})
    continue()  # an empty folder: an empty filter would be every test
  endif()
  list(JOIN _gt_filter_${_gt_kind} ":" _gt_filter)
  gtest_discover_tests(flagprop_tests
    PROPERTIES LABELS cpu-${_gt_kind} TIMEOUT ${_gt_timeout_${_gt_kind}} ENVIRONMENT FLAGPROP_DB=off
    TEST_FILTER "${_gt_filter}"
    DISCOVERY_TIMEOUT 120)
endforeach()
