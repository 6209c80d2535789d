# The fuzz harnesses (fuzz/<name>.cpp) and what each links, shared by the libFuzzer build
# (fuzz/CMakeLists.txt, PATHLIFT_FUZZ) and the replay of the corpora as a test
# (tests/CMakeLists.txt, with any compiler).
#   fuzz_network: the library's network and layer-graph JSON readers
#   fuzz_onnx: the library's ONNX reader
#   fuzz_npy, fuzz_text: the CLI's .npy and text readers
#   fuzz_cli: the CLI's command-line parsing
#   fuzz_metric, fuzz_rescale: the path-metric, the Lipschitz bound, PathCond and ENorm on
#     hostile parameter vectors and options
set(PATHLIFT_FUZZ_HARNESSES fuzz_network fuzz_onnx fuzz_npy fuzz_text fuzz_cli fuzz_metric
                            fuzz_rescale)
set(PATHLIFT_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})

# pathlift_fuzz_target(<target> <harness> [sources...]): an executable of the harness and the
# given sources (replay_main.cpp, or none under libFuzzer, which brings its own main).
function(pathlift_fuzz_target target harness)
  add_executable(${target} ${PATHLIFT_FUZZ_DIR}/${harness}.cpp ${ARGN})
  target_include_directories(${target} PRIVATE ${PATHLIFT_FUZZ_DIR} ${PROJECT_SOURCE_DIR})
  if(harness MATCHES "^fuzz_(network|onnx|metric|rescale)$")
    target_link_libraries(${target} PRIVATE pathlift::pathlift nlohmann_json::nlohmann_json)
  else()
    target_link_libraries(${target} PRIVATE pathlift_cli_objects)
  endif()
  target_link_libraries(${target} PRIVATE pathlift_warnings pathlift_sanitizers)
endfunction()
