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

include(CheckCXXSourceRuns)

# pagoda_test(NAME LIBS... [SOURCES FILE...] [EXCLUDE FILE...] [SANITIZE LIST]): one
# GoogleTest binary, test_NAME, from tests/<folder>/*.cpp, its tests registered with
# CTest. SOURCES gives its files instead, for a folder whose tests make several binaries;
# EXCLUDE leaves files of the folder to such another binary. SANITIZE (address,undefined
# or thread) compiles its sources with those sanitizers (pagoda_sanitize). Tests find
# their files through PAGODA_TEST_DATA_DIR (committed fixtures) and PAGODA_SHARED_DIR (the
# large models): see tests/test_data.h.
function(pagoda_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SANITIZE" "SOURCES;EXCLUDE")
  if(arg_SOURCES)
    set(sources ${arg_SOURCES})
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
    list(TRANSFORM arg_EXCLUDE PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
    foreach(file IN LISTS arg_EXCLUDE)
      list(REMOVE_ITEM sources ${file})
    endforeach()
  endif()
  if(NOT sources)
    return()
  endif()
  add_executable(test_${name} ${sources})
  target_link_libraries(test_${name} PRIVATE ${arg_UNPARSED_ARGUMENTS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(test_${name} PRIVATE
    PAGODA_TEST_DATA_DIR="${PAGODA_TEST_DATA_DIR}"
    PAGODA_SHARED_DIR="${PAGODA_SHARED_DIR}"
    PAGODA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(arg_SANITIZE)
    pagoda_sanitize(test_${name} ${arg_SANITIZE})
  endif()
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
endfunction()

# pagoda_sanitize(TARGET LIST): compiles and links TARGET's own sources with
# -fsanitize=LIST, where a program built so runs on this machine (checked once at
# configure time: some kernels' address-space layouts stop ThreadSanitizer from starting,
# and LeakSanitizer needs ptrace); elsewhere it is built plain, said in a status line.
function(pagoda_sanitize target sanitizers)
  set(flags -fsanitize=${sanitizers} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  string(MAKE_C_IDENTIFIER "PAGODA_SANITIZERS_RUN_${sanitizers}" runs)
  string(JOIN " " CMAKE_REQUIRED_FLAGS ${flags})
  set(CMAKE_REQUIRED_LINK_OPTIONS ${flags})
  check_cxx_source_runs("#include <thread>
int main() { int x = 0; std::thread t([&] { x = 1; }); t.join(); return x - 1; }" ${runs})
  if(${runs})
    target_compile_options(${target} PRIVATE ${flags} -g)
    target_link_options(${target} PRIVATE ${flags})
  else()
    message(STATUS "${target}: -fsanitize=${sanitizers} does not run here; built without it")
  endif()
endfunction()
