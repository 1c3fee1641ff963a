# Tests of report.html and the bug-report drafts (python/flagprop/reporting/htmlreport.py
# and drafts.py), label "cpu". Included from the top-level CMakeLists.txt, which
# sets FLAGPROP_SOURCE_DIR_FOR_TESTS and the `flagprop` target.
#
#   report_units          both modules on made-up reports (no run, no browser)
#   report_matrix_run     one `flagprop run` on a small known matrix (a ctest
#                         fixture: the two tests below read its report)
#   report_html_chromium  report.html in headless Chromium: cells' text and
#                         colours, nothing loaded from the network; leaves
#                         report.png in report-tests/matrix/
#   report_drafts         drafts/ of that report: one per distinct failure
if(NOT DEFINED FLAGPROP_SOURCE_DIR_FOR_TESTS)
  set(FLAGPROP_SOURCE_DIR_FOR_TESTS "${CMAKE_CURRENT_SOURCE_DIR}")
endif()
set(_report_tests_src "${FLAGPROP_SOURCE_DIR_FOR_TESTS}/tests/html")
set(_report_tests_out "${CMAKE_CURRENT_BINARY_DIR}/report-tests/matrix")

add_test(NAME report_units
  COMMAND "${Python_EXECUTABLE}" "${_report_tests_src}/test_units.py")
add_test(NAME report_matrix_run
  COMMAND "${Python_EXECUTABLE}" "${_report_tests_src}/run_matrix.py"
          --flagprop $<TARGET_FILE:flagprop> --out "${_report_tests_out}")
add_test(NAME report_html_chromium
  COMMAND "${Python_EXECUTABLE}" "${_report_tests_src}/test_report_html.py" --report-dir "${_report_tests_out}")
add_test(NAME report_drafts
  COMMAND "${Python_EXECUTABLE}" "${_report_tests_src}/test_drafts.py" --report-dir "${_report_tests_out}"
          --flagprop $<TARGET_FILE:flagprop>)

set_tests_properties(report_matrix_run PROPERTIES FIXTURES_SETUP flagprop_report_matrix)
set_tests_properties(report_html_chromium report_drafts PROPERTIES FIXTURES_REQUIRED flagprop_report_matrix)
set_tests_properties(report_units PROPERTIES LABELS cpu-unit TIMEOUT 300)
set_tests_properties(report_matrix_run report_html_chromium report_drafts PROPERTIES LABELS cpu-e2e TIMEOUT 300)
