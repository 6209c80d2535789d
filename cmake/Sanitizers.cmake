# PATHLIFT_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every target of the project.
add_library(pathlift_sanitizers INTERFACE)
if(PATHLIFT_SANITIZE)
  set(_pathlift_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_compile_options(pathlift_sanitizers INTERFACE ${_pathlift_san})
  target_link_options(pathlift_sanitizers INTERFACE ${_pathlift_san})
endif()
