# Unit tests of flagprop's Python functions alone (label cpu-unit): one
# entry per file under tests/unit/, named py_unit_<stem>, each
# `python3 -B -m unittest -v <stem>` run in tests/unit with the checkout in
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
