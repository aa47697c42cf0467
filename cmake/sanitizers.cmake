# -DVITUNE_SANITIZE=address builds everything with AddressSanitizer and
# UndefinedBehaviorSanitizer, stopping at the first report; -DVITUNE_SANITIZE=thread
# with ThreadSanitizer (the loader's prefetch threads and the parallel_for pool).
set(VITUNE_SANITIZE "" CACHE STRING "Build with sanitizers: address (ASan + UBSan), thread (TSan) or empty")
set_property(CACHE VITUNE_SANITIZE PROPERTY STRINGS "" address thread)

if(VITUNE_SANITIZE STREQUAL "address")
  set(VITUNE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all)
elseif(VITUNE_SANITIZE STREQUAL "thread")
  set(VITUNE_SANITIZER_FLAGS -fsanitize=thread)
elseif(NOT VITUNE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "VITUNE_SANITIZE=${VITUNE_SANITIZE}: expected address, thread or empty")
endif()

# Adds compile flags to C and C++ sources only (nvcc takes none of them).
function(vitune_add_host_compile_options)
  foreach(flag ${ARGN})
    string(REPLACE "," "$<COMMA>" flag "${flag}")
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${flag}>")
  endforeach()
endfunction()

if(VITUNE_SANITIZER_FLAGS)
  vitune_add_host_compile_options(${VITUNE_SANITIZER_FLAGS} -fno-omit-frame-pointer -g)
  add_link_options(${VITUNE_SANITIZER_FLAGS})
  message(STATUS "vitune sanitizers: ${VITUNE_SANITIZE}")
endif()

# stb_image (compiled in data/image_decode.cpp; not vitune's code) does two things that
# are undefined in the letter of the C standard and harmless in fact; UBSan's checks for
# them are off for that one file (AddressSanitizer stays on); called after data/ is added:
#  - nonnull-attribute: it copies zero bytes from a null pointer when a PNG's first IDAT
#    chunk is empty;
#  - shift-exponent: its JPEG bit reader (stbi__grow_buffer_unsafe) shifts a byte by
#    24 - code_bits, which corrupt Huffman data drives negative (a shift by 33, found by
#    fuzz_image, fuzz/regressions/image/jpeg_huffman_negative_code_bits); x86 masks the
#    count, so a corrupt file decodes to wrong pixels inside its own buffers.
function(vitune_exempt_stb_from_ub_checks)
  if(VITUNE_SANITIZE STREQUAL "address" OR VITUNE_FUZZ)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/data/image_decode.cpp DIRECTORY ${PROJECT_SOURCE_DIR}/data
                                PROPERTIES COMPILE_OPTIONS "-fno-sanitize=nonnull-attribute;-fno-sanitize=shift-exponent")
  endif()
endfunction()

# stb_image_write (compiled in tests/data/data_test_files.cpp, which writes the images
# the data tests read) shifts negative ints in its JPEG encoder; UBSan's shift check is
# off for that test file. Called from tests/CMakeLists.txt.
function(vitune_exempt_stb_write_from_shift_check)
  if(VITUNE_SANITIZE STREQUAL "address")
    set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/data/data_test_files.cpp
                                PROPERTIES COMPILE_OPTIONS -fno-sanitize=shift)
  endif()
endfunction()
