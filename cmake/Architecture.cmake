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
    # GCC 12.2 (Debian 12) miscompiles under -mavx512f: its SLP vectorizer builds the vector
    # {1e200, 1e200, 0, 0} of an initializer list as four copies of 1e200 (a broadcast that
    # loses its mask), so a library built for an AVX-512 machine gives wrong numbers. The probe
    # below is that case; where it fails, AVX-512 is left out (AVX2 and FMA stay).
    include(CheckCXXSourceRuns)
    set(_pathlift_probe [=[
#include <vector>
int main() {
  std::vector<double> t = {1e200, 1e200, 0.0, 0.0};
  asm volatile("" : : "r"(t.data()) : "memory");
  return (t[0] == 1e200 && t[1] == 1e200 && t[2] == 0.0 && t[3] == 0.0) ? 0 : 1;
}
]=])
    set(CMAKE_REQUIRED_FLAGS "-O3 -march=native")
    check_cxx_source_runs("${_pathlift_probe}" PATHLIFT_NATIVE_CODEGEN_OK)
    if(NOT PATHLIFT_NATIVE_CODEGEN_OK)
      set(CMAKE_REQUIRED_FLAGS "-O3 -march=native -mno-avx512f")
      check_cxx_source_runs("${_pathlift_probe}" PATHLIFT_NATIVE_NO_AVX512_OK)
      if(PATHLIFT_NATIVE_NO_AVX512_OK)
        set(PATHLIFT_ARCH_FLAGS -march=native -mno-avx512f)
        message(STATUS "pathlift: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} "
                       "miscompiles AVX-512 code (docs/install.md): building without AVX-512")
      else()
        set(PATHLIFT_ARCH_FLAGS "")
        message(WARNING "pathlift: the compiler's -march=native code fails a probe: "
                        "building for generic x86-64")
      endif()
    endif()
    unset(CMAKE_REQUIRED_FLAGS)
  else()
    message(WARNING "pathlift: ${CMAKE_CXX_COMPILER_ID} does not accept -march=native: "
                    "building for generic x86-64 (PATHLIFT_NATIVE has no effect)")
  endif()
endif()
add_compile_options(${PATHLIFT_ARCH_FLAGS})
if(PATHLIFT_ARCH_FLAGS)
  string(REPLACE ";" " " _pathlift_arch "${PATHLIFT_ARCH_FLAGS}")
  message(STATUS "pathlift: compiling for this machine (${_pathlift_arch}); "
                 "-DPATHLIFT_NATIVE=OFF for a portable build")
else()
  message(STATUS "pathlift: portable build (no -march)")
endif()
