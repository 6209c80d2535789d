// limits.hpp: the names of the objects whose memory is estimated.

#include "pathlift/limits.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

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
}  // namespace pathlift
