// The text reader of the CLI (read_vector and read_matrix on a file named .txt: numbers
// separated by whitespace or commas, '#' comments): any bytes give a vector or matrix, or a
// pathlift error naming the file.

#include <cstddef>
#include <cstdint>

#include "harness.hpp"
#include "matrix_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static pathlift::fuzz::ScratchFile file(".txt");
  const std::string& path = file.write(data, size);
  pathlift::fuzz::expect_clean([&] { (void)pathlift::cli::read_vector(path); }, path);
  pathlift::fuzz::expect_clean(
      [&] {
        const auto m = pathlift::cli::read_matrix(path, false);
        if (m.rows() < 1 || m.cols() < 1) {
          pathlift::fuzz::fail("read_matrix returned an empty matrix", path);
        }
      },
      path);
  return 0;
}
