# The browser console (http.console, issue #20 item 4) in a real browser:
# Debian's chromium headless, driven over the DevTools protocol by a Python
# script (standard library only). The screenshots it takes stay in
# build/tests/console-output.
add_test(NAME test_console COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/console/test_console.py)
set_tests_properties(test_console PROPERTIES LABELS "integration;broker;console" TIMEOUT 600
  ENVIRONMENT "REAPER_SOURCE_DIR=${CMAKE_SOURCE_DIR};REAPERD=$<TARGET_FILE:reaperd>;CONSOLE_TEST_OUT=${CMAKE_CURRENT_BINARY_DIR}/console-output")
