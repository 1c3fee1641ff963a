# JSON Schema checks of flagprop's documents (schemas/, docs/schemas.md), with
# Debian's python3-jsonschema: every manifest in the source tree, and the
# report.json of a small run whose seed is above 2^53, so that a seed written
# as a JSON number (and read back rounded) fails.
set(FLAGPROP_SCHEMA_SEED 18446744073709551557)
add_test(NAME schema_manifests
  COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/schemas/validate.py --manifests)
add_test(NAME schema_report
  COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/schemas/validate.py
          --run $<TARGET_FILE:flagprop> --seed ${FLAGPROP_SCHEMA_SEED}
          --keep ${CMAKE_CURRENT_BINARY_DIR}/schema-report --
          --manifest ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/targets/r5-silent-skip.json
          --manifest ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/targets/ops-two-faults.json
          --manifest ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/targets/ops-flaky.json
          --cases 20)
set_tests_properties(schema_manifests PROPERTIES LABELS cpu-unit TIMEOUT 600)
set_tests_properties(schema_report PROPERTIES LABELS cpu-e2e TIMEOUT 600)
