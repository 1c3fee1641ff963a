# Python tests, labelled by their folder as the GoogleTest ones are: one
# entry per file under tests/unit/ (py_unit_<stem>, cpu-unit) and
# tests/e2e/ (py_e2e_<stem>, cpu-e2e: FLAGPROP_BINARY is the flagprop built), each
# `python3 -B -m unittest -v <stem>` run in its folder with the checkout in
# FLAGPROP_SOURCE_DIR (the tests put its python/ folder on sys.path). A file
# added there is registered at the next configure (CONFIGURE_DEPENDS).
# Included from the top-level CMakeLists.txt (after Python_EXECUTABLE is set).
set(_py_unit_dir "${CMAKE_CURRENT_SOURCE_DIR}/tests/unit")
file(GLOB _py_unit_files CONFIGURE_DEPENDS "${_py_unit_dir}/*.py")
foreach(_py_unit_file IN LISTS _py_unit_files)
  get_filename_component(_py_unit_stem "${_py_unit_file}" NAME_WE)
  add_test(NAME py_unit_${_py_unit_stem}
    COMMAND "${Python_EXECUTABLE}" -B -m unittest -v ${_py_unit_stem}
    WORKING_DIRECTORY "${_py_unit_dir}")
  set_tests_properties(py_unit_${_py_unit_stem} PROPERTIES
    LABELS cpu-unit TIMEOUT 300 ENVIRONMENT "FLAGPROP_SOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}")
endforeach()

set(_py_e2e_dir "${CMAKE_CURRENT_SOURCE_DIR}/tests/e2e")
file(GLOB _py_e2e_files CONFIGURE_DEPENDS "${_py_e2e_dir}/*.py")
foreach(_py_e2e_file IN LISTS _py_e2e_files)
  get_filename_component(_py_e2e_stem "${_py_e2e_file}" NAME_WE)
  add_test(NAME py_e2e_${_py_e2e_stem}
    COMMAND "${Python_EXECUTABLE}" -B -m unittest -v ${_py_e2e_stem}
    WORKING_DIRECTORY "${_py_e2e_dir}")
  set_tests_properties(py_e2e_${_py_e2e_stem} PROPERTIES
    LABELS cpu-e2e TIMEOUT 900
    ENVIRONMENT "FLAGPROP_SOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR};FLAGPROP_BINARY=$<TARGET_FILE:flagprop>")
endforeach()
