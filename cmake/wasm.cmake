# The WebAssembly build (emcmake cmake -S . -B build-web; scripts/build_wasm):
# the library and the CLI for node, single-threaded, on the portable kernels.
# No OpenBLAS (wasm/cblas.c puts the library's few CBLAS calls on the portable
# products), no libomp (wasm/omp.c: one thread; the omp pragmas are left out
# without -fopenmp), no server, no MPI, no shared library. PCRE2, cJSON and
# utf8proc come from scripts/wasm_deps, built from Debian's sources.
set(STORYLM_WASM_DEPS "${PROJECT_BINARY_DIR}/deps/prefix" CACHE PATH "PCRE2, cJSON and utf8proc for wasm32 (scripts/wasm_deps)")
foreach(lib cjson pcre2-8 utf8proc)
  if(NOT EXISTS "${STORYLM_WASM_DEPS}/lib/lib${lib}.a")
    message(FATAL_ERROR "no ${STORYLM_WASM_DEPS}/lib/lib${lib}.a: run scripts/wasm_deps first (scripts/build_wasm does)")
  endif()
endforeach()
# The native build's flags without -march (a wasm32 target has no CPU to
# name), with SIMD128: the portable kernels' vectors (GCC/Clang vector
# extensions) become 4-lane wasm vectors, each lane rounding on its own, so
# they change no bit (docs/kernels.md); wasm has no FMA to contract into.
# -flto gave no training step measurably faster (bench train in node, 4 runs
# each in turn, within the noise), so it is left out.
# -mbulk-memory: memset and memcpy as wasm's memory.fill and memory.copy (a
# training step clears its shards' gradients, 11 MB, with them).
set(CMAKE_C_FLAGS_RELEASE "-O3 -msimd128 -mbulk-memory -DNDEBUG")
# Binaryen (emcc's link step) inlines every function that has one caller,
# whatever its size; the passes' kernels that C keeps apart for V8
# (attention.c's SIZED, layers.c's WASM_APART) would be one function again,
# which V8 compiles with its optimising compiler in 0.3 to 1 s. Up to 200 of
# its nodes a function still goes inline.
add_link_options("-sBINARYEN_EXTRA_PASSES=--one-caller-inline-max-function-size=200")
add_compile_options(-Wno-unknown-pragmas) # the omp pragmas, left out on purpose

add_library(storylm_wasm_deps INTERFACE)
target_include_directories(storylm_wasm_deps INTERFACE ${PROJECT_SOURCE_DIR}/wasm/include
  ${STORYLM_WASM_DEPS}/include ${STORYLM_WASM_DEPS}/include/cjson)
target_compile_definitions(storylm_wasm_deps INTERFACE PCRE2_STATIC)
target_link_libraries(storylm_wasm_deps INTERFACE ${STORYLM_WASM_DEPS}/lib/libpcre2-8.a
  ${STORYLM_WASM_DEPS}/lib/libcjson.a ${STORYLM_WASM_DEPS}/lib/libutf8proc.a m)
set(STORYLM_WASM_SOURCES ${PROJECT_SOURCE_DIR}/wasm/cblas.c ${PROJECT_SOURCE_DIR}/wasm/omp.c)
set_source_files_properties(${PROJECT_SOURCE_DIR}/wasm/cblas.c PROPERTIES
  INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}/src/model)

# The node entry: the CLI's main and verbs (all but serve) as build-web/storylm.js
# with the host's files (NODERAWFS), and storylm.mjs, the module node runs.
function(storylm_wasm_cli target)
  set_target_properties(${target} PROPERTIES SUFFIX ".js")
  target_link_options(${target} PRIVATE -sNODERAWFS=1 -sENVIRONMENT=node -sALLOW_MEMORY_GROWTH=1
    -sINITIAL_MEMORY=64MB -sTOTAL_STACK=8MB -sEXIT_RUNTIME=1
    -sWASM_ASYNC_COMPILATION=0 # node 18 and later have fetch, which 3.1.6 would use on a path
    --pre-js ${PROJECT_SOURCE_DIR}/wasm/node_env.js)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/wasm/node_env.js)
  configure_file(${PROJECT_SOURCE_DIR}/wasm/storylm.mjs ${PROJECT_BINARY_DIR}/storylm.mjs COPYONLY)
endfunction()
