# Tests of the standalone reproducers (labels cpu-unit, cpu-teeth, cpu-e2e in turn):
#   repro_slim            flagprop.tools.slim, which cuts flagprop's Python code down
#                         to what a reproducer's case runs (unit tests);
#   repro_checker_teeth   the end-to-end checks below catch a reproducer that is
#                         too large, holds an absolute path or exits wrongly;
#   repro_end_to_end      `flagprop run` over failing fixtures (P1, P3, P5 / P6, a
#                         segfaulting op, an op with two distinct faults), then
#                         every reproducer (a distinct failure's too): < 60000 bytes,
#                         no absolute path of this machine, exit 1 with the
#                         python that has torch, exit 3 (and why) without torch;
#                         and the reproducers of an installed copy (cmake --install)
#                         run from outside the checkout, exit 1.
# Included from the top-level CMakeLists.txt (after the flagprop target).
set(_repro_dir "${CMAKE_CURRENT_SOURCE_DIR}/tests/repro")
add_test(NAME repro_slim
  COMMAND "${Python_EXECUTABLE}" -B -m unittest -v test_slim
  WORKING_DIRECTORY "${_repro_dir}")
add_test(NAME repro_checker_teeth
  COMMAND "${Python_EXECUTABLE}" -B "${_repro_dir}/check_reproducers.py" --self-test
          --python "${Python_EXECUTABLE}" --source-dir "${CMAKE_CURRENT_SOURCE_DIR}")
add_test(NAME repro_end_to_end
  COMMAND "${Python_EXECUTABLE}" -B "${_repro_dir}/check_reproducers.py"
          --flagprop $<TARGET_FILE:flagprop> --python "${Python_EXECUTABLE}"
          --source-dir "${CMAKE_CURRENT_SOURCE_DIR}" --install)
set_tests_properties(repro_slim repro_checker_teeth repro_end_to_end PROPERTIES
  TIMEOUT 300 ENVIRONMENT "FLAGPROP_SOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}")
set_tests_properties(repro_end_to_end PROPERTIES TIMEOUT 600)  # a full search and shrink per target (--no-db)
set_tests_properties(repro_slim PROPERTIES LABELS cpu-unit)
set_tests_properties(repro_checker_teeth PROPERTIES LABELS cpu-teeth)
set_tests_properties(repro_end_to_end PROPERTIES LABELS cpu-e2e)
