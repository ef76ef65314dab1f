# pytest suites of the torch backend, run by CTest with Debian's interpreter.
