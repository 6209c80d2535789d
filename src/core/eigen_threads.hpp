#pragma once
// One guard for Eigen's own threads: code that splits its work itself, in blocks of fixed
// shapes (the layer DP, LOBPCG), runs Eigen's products on one thread inside those blocks, so
// that results do not depend on the thread count.

#include <Eigen/Core>

namespace pathlift::detail {

/// Eigen's threads set to 1 for the guard's lifetime, then restored.
class EigenSingleThread {
 public:
  EigenSingleThread() : m_saved(Eigen::nbThreads()) { Eigen::setNbThreads(1); }
  EigenSingleThread(const EigenSingleThread&) = delete;
  EigenSingleThread& operator=(const EigenSingleThread&) = delete;
  ~EigenSingleThread() { Eigen::setNbThreads(m_saved); }

 private:
  int m_saved;
};

}  // namespace pathlift::detail
