// limits.hpp: the names of the objects whose memory is estimated; options.hpp: the bound on
// thread counts.

#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <omp.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "pathlift/options.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

TEST(Limits, PathObjectNamesReadBack) {
  for (const auto o : {PathObject::path_set, PathObject::path_lifting, PathObject::skeleton,
                       PathObject::jacobian, PathObject::dense_jacobian}) {
    EXPECT_EQ(parse_path_object(to_string(o)), o) << to_string(o);
  }
  EXPECT_EQ(parse_path_object("paths"), PathObject::path_set);
  EXPECT_EQ(parse_path_object("phi"), PathObject::path_lifting);
  EXPECT_EQ(testing::error_of<std::invalid_argument>([] { (void)parse_path_object("kernel"); }),
            "unknown path object 'kernel': expected path_set (or paths), path_lifting (or phi), "
            "skeleton, jacobian or dense_jacobian");
}

}  // namespace
/// More threads than the machine can run are refused with the bound (libgomp aborts or crashes
/// past what it can create: issue 19).
TEST(Limits, ThreadCountsAreBounded) {
  EXPECT_GE(max_threads(), 64);
  EXPECT_EQ(resolve_threads(max_threads()), max_threads());
  EXPECT_EQ(resolve_threads(3), 3);
  EXPECT_GE(resolve_threads(0), 1);
  try {
    (void)resolve_threads(100000);
    FAIL() << "100000 threads accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("at most {}", max_threads())),
              std::string::npos)
        << e.what();
  }
}

/// threads = 0 means every core, or OMP_NUM_THREADS: not OpenMP's default as another library
/// in the process left it (importing PyTorch calls omp_set_num_threads(physical cores), which
/// made every default call single-threaded on a 2-thread machine).
TEST(Limits, ZeroThreadsIsEveryCoreWhateverOpenMpsDefault) {
  const char* saved = std::getenv("OMP_NUM_THREADS");
  const std::string before = saved != nullptr ? saved : "";
  ::unsetenv("OMP_NUM_THREADS");
  const int default_before = omp_get_max_threads();
  omp_set_num_threads(1);
  EXPECT_EQ(resolve_threads(0), omp_get_num_procs());
  ::setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(resolve_threads(0), 3);
  ::setenv("OMP_NUM_THREADS", "5,2", 1);
  EXPECT_EQ(resolve_threads(0), 5);
  ::setenv("OMP_NUM_THREADS", "none", 1);
  EXPECT_EQ(resolve_threads(0), omp_get_num_procs());
  omp_set_num_threads(default_before);
  if (saved != nullptr) {
    ::setenv("OMP_NUM_THREADS", before.c_str(), 1);
  } else {
    ::unsetenv("OMP_NUM_THREADS");
  }
}

}  // namespace pathlift
