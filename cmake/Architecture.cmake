# PATHLIFT_NATIVE (default ON): compile everything for the building machine's vector units
# (-march=native: AVX2, FMA, AVX-512 where present), which the layer DP's GEMMs and the DAG DP's
# loops need to run near the hardware's limit (docs/benchmarks.md#vector-units). OFF gives a
# portable x86-64 build (SSE2), for a binary that must run on other machines.
#
# The flag is set for every target of the project and carried by the exported pathlift target:
# Eigen's alignment and vectorisation must agree between the library and the code that shares
# its Eigen objects (a consumer built without it would free 32-byte-aligned Eigen blocks as
# 16-byte ones), so a consumer of a native build is compiled native too.
option(PATHLIFT_NATIVE "Compile for this machine's instruction set (-march=native); OFF: portable" ON)
set(PATHLIFT_ARCH_FLAGS "")
if(PATHLIFT_NATIVE)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native PATHLIFT_HAVE_MARCH_NATIVE)
  if(PATHLIFT_HAVE_MARCH_NATIVE)
    set(PATHLIFT_ARCH_FLAGS -march=native)
  else()
    message(WARNING "pathlift: ${CMAKE_CXX_COMPILER_ID} does not accept -march=native: "
                    "building for generic x86-64 (PATHLIFT_NATIVE has no effect)")
  endif()
endif()
add_compile_options(${PATHLIFT_ARCH_FLAGS})
if(PATHLIFT_ARCH_FLAGS)
  message(STATUS "pathlift: compiling for this machine (${PATHLIFT_ARCH_FLAGS}); "
                 "-DPATHLIFT_NATIVE=OFF for a portable build")
else()
  message(STATUS "pathlift: portable build (no -march)")
endif()
