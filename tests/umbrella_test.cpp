// The umbrella header compiles alone and every feature header can be included together:
// a name defined twice across headers would fail to compile here.

#include <gtest/gtest.h>

#include "pathlift/pathlift.hpp"

namespace pathlift {
namespace {

TEST(Umbrella, VersionMatchesTheProject) {
  EXPECT_EQ(std::to_string(version_major) + "." + std::to_string(version_minor) + "." +
                std::to_string(version_patch),
            std::string(version_string));
}

}  // namespace
}  // namespace pathlift
