# pagoda_library(NAME DEPS... [SUBDIRS DIR...]): one static library per source folder,
# made of every .cpp in it and in the subfolders SUBDIRS names (for a library whose
# parts use one another both ways). Includes are rooted at src/, so code writes
# #include "gguf/reader.h".
function(pagoda_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SUBDIRS")
  set(patterns ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(dir IN LISTS arg_SUBDIRS)
    list(APPEND patterns ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cpp)
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${patterns})
  pagoda_add_library(${name} "${sources}" ${arg_UNPARSED_ARGUMENTS})
endfunction()

# pagoda_add_library(NAME SOURCES DEPS...): the library pagoda_NAME of the sources given
# as one list (header-only when it is empty), for folders that choose their own.
# Files named *_avx2.cpp, *_avx512.cpp, *_avx512bf16.cpp (with its BF16 dot products),
# *_avx512vnni.cpp and *_amx.cpp (AVX-512 VNNI and the AMX tiles) are compiled for that
# instruction set only; the code that calls them checks the CPU at run time first.
function(pagoda_add_library name sources)
  if(NOT sources)
    add_library(pagoda_${name} INTERFACE)  # a header-only layer
    target_include_directories(pagoda_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(pagoda_${name} INTERFACE ${ARGN})
    return()
  endif()
  add_library(pagoda_${name} STATIC ${sources})
  target_include_directories(pagoda_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(pagoda_${name} PUBLIC ${ARGN})
  foreach(src IN LISTS sources)
    if(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    elseif(src MATCHES "_amx\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mamx-tile;-mamx-int8")
    elseif(src MATCHES "_avx512vnni\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni")
    elseif(src MATCHES "_avx512bf16\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16")
    elseif(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq")
    endif()
  endforeach()
endfunction()

# pagoda_test(NAME LIBS...): one GoogleTest binary from tests/<folder>/*.cpp,
# its tests registered with CTest. Tests find their files through PAGODA_TEST_DATA_DIR
# (committed fixtures) and PAGODA_SHARED_DIR (the large models): see tests/test_data.h.
function(pagoda_test name)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(test_${name} ${sources})
  target_link_libraries(test_${name} PRIVATE ${ARGN} GTest::gtest GTest::gtest_main GTest::gmock)
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(test_${name} PRIVATE
    PAGODA_TEST_DATA_DIR="${PAGODA_TEST_DATA_DIR}"
    PAGODA_SHARED_DIR="${PAGODA_SHARED_DIR}"
    PAGODA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
endfunction()
