# LAPACKE (singular values of dPhi: dgesvd) and FLINT (dense ranks modulo a prime:
# nmod_mat_rank), from Debian's liblapacke-dev and libflint-dev. Neither ships a CMake package,
# so the libraries are found by name; their full paths are linked (a static pathlift exports
# them as such to find_package(pathlift) users).
find_path(PATHLIFT_LAPACKE_INCLUDE_DIR lapacke.h PATH_SUFFIXES lapacke)
find_library(PATHLIFT_LAPACKE_LIBRARY lapacke)
find_path(PATHLIFT_FLINT_INCLUDE_DIR flint/nmod_mat.h)
find_library(PATHLIFT_FLINT_LIBRARY flint)
# GMP (libgmp-dev, a dependency of libflint-dev): FLINT's exact integer matrices (fmpz_mat,
# the exact ranks of symmetry.cpp) call it from inline functions.
find_library(PATHLIFT_GMP_LIBRARY gmp)
foreach(_var PATHLIFT_LAPACKE_INCLUDE_DIR PATHLIFT_LAPACKE_LIBRARY PATHLIFT_FLINT_INCLUDE_DIR
             PATHLIFT_FLINT_LIBRARY PATHLIFT_GMP_LIBRARY)
  if(NOT ${_var})
    message(FATAL_ERROR "pathlift: ${_var} not found (Debian: apt-get install liblapacke-dev "
                        "libflint-dev libgmp-dev, or run scripts/install-deps.sh)")
  endif()
endforeach()
