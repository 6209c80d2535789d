# Warnings as errors on the project's own code, through a private interface target.
add_library(pathlift_warnings INTERFACE)
target_compile_options(pathlift_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Werror -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference -Wformat=2)
