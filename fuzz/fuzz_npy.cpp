// The .npy reader of the CLI (read_vector and read_matrix on a file named .npy: --theta,
// --data): any bytes give a vector or matrix, or a pathlift error naming the file.

#include <cstddef>
#include <cstdint>

#include "harness.hpp"
#include "matrix_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static pathlift::fuzz::ScratchFile file(".npy");
  const std::string& path = file.write(data, size);
  pathlift::fuzz::expect_clean([&] { (void)pathlift::cli::read_vector(path); }, path);
  pathlift::fuzz::expect_clean([&] { (void)pathlift::cli::read_matrix(path, false); }, path);
  return 0;
}
