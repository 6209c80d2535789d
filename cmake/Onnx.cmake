# ONNX import (read_onnx): the ONNX protobuf classes of Debian's libonnx-dev and the protobuf
# runtime of libprotobuf-dev. Found by name, like LAPACKE and FLINT: their full paths are linked
# (a static pathlift exports them as such to find_package(pathlift) users), and ONNX's own CMake
# package is not used because its targets would have to be found again by every consumer.
find_path(PATHLIFT_ONNX_INCLUDE_DIR onnx/onnx_pb.h)
find_library(PATHLIFT_ONNX_PROTO_LIBRARY onnx_proto)
find_path(PATHLIFT_PROTOBUF_INCLUDE_DIR google/protobuf/message.h)
find_library(PATHLIFT_PROTOBUF_LIBRARY protobuf)
foreach(_var PATHLIFT_ONNX_INCLUDE_DIR PATHLIFT_ONNX_PROTO_LIBRARY PATHLIFT_PROTOBUF_INCLUDE_DIR
             PATHLIFT_PROTOBUF_LIBRARY)
  if(NOT ${_var})
    message(FATAL_ERROR "pathlift: ${_var} not found (Debian: apt-get install libonnx-dev "
                        "libprotobuf-dev, or run scripts/install-deps.sh)")
  endif()
endforeach()
