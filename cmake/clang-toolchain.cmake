# The fuzz preset's compiler: libFuzzer needs clang. Takes the first clang++ on PATH, plain or
# versioned (Debian installs clang++-14 with its `clang-14` package and clang++ with `clang`).
find_program(MRC_CLANGXX NAMES clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14)
if(NOT MRC_CLANGXX)
  message(FATAL_ERROR "the fuzz preset needs clang++ (libFuzzer): install Debian's clang (apt-get install clang)")
endif()
set(CMAKE_CXX_COMPILER ${MRC_CLANGXX})
