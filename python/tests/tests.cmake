# pytest suites of the torch backend, run by CTest with the interpreter the module was built for
# (Debian's /usr/bin/python3). Each file owns UDP port ranges no other test uses, so CTest may run
# them in parallel with each other and the rest: test_backend.py 25000-28599 and 23400-23999,
# test_training.py 28600-29999 and 22000-23399, test_failures.py 1100-1999 and 3000-4700
# (2000-2999, 20000-21999 and 24000-24999 belong to C++ and shell tests).
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pytest" RESULT_VARIABLE MRC_NO_PYTEST
                OUTPUT_QUIET ERROR_QUIET)
if(MRC_NO_PYTEST)
  message(STATUS "mrc: torch backend tests skipped: no pytest for ${Python3_EXECUTABLE} "
                 "(apt-get install python3-pytest)")
  return()
endif()

foreach(suite Backend Training Failures)
  string(TOLOWER ${suite} file)
  add_test(NAME Torch.${suite}
           COMMAND ${Python3_EXECUTABLE} -m pytest -p no:cacheprovider -q -rfE
                   ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_${file}.py)
  set_tests_properties(Torch.${suite} PROPERTIES
    TIMEOUT 300
    ENVIRONMENT "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
endforeach()
