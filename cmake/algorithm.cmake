# The page's "The algorithm": the marked regions of these files, taken at build
# time into algorithm.json (cmake/extract_code.cmake), so the code it shows is
# the code that runs.
set(STORYLM_ALGORITHM_FILES src/model/attention.c src/model/layers.c src/arch/attention/attention_arch.c src/model/readout.c src/model/adam.c
    python/examples/attention_network.py)
set(STORYLM_ALGORITHM_PARTS "attention forward;hidden layer;output and loss;backward;adam step")
set(STORYLM_WEB_EXTRA ${PROJECT_BINARY_DIR}/generated/web_extra)
string(REPLACE ";" "|" STORYLM_ALGORITHM_FILES_ARG "${STORYLM_ALGORITHM_FILES}") # one argument each
string(REPLACE ";" "|" STORYLM_ALGORITHM_PARTS_ARG "${STORYLM_ALGORITHM_PARTS}")
list(TRANSFORM STORYLM_ALGORITHM_FILES PREPEND ${PROJECT_SOURCE_DIR}/ OUTPUT_VARIABLE STORYLM_ALGORITHM_PATHS)
add_custom_command(OUTPUT ${STORYLM_WEB_EXTRA}/algorithm.json
  COMMAND ${CMAKE_COMMAND} -E make_directory ${STORYLM_WEB_EXTRA}
  COMMAND ${CMAKE_COMMAND} -DSRC_DIR=${PROJECT_SOURCE_DIR} "-DFILES=${STORYLM_ALGORITHM_FILES_ARG}"
          "-DPARTS=${STORYLM_ALGORITHM_PARTS_ARG}" -DOUT=${STORYLM_WEB_EXTRA}/algorithm.json
          -P ${PROJECT_SOURCE_DIR}/cmake/extract_code.cmake
  DEPENDS ${STORYLM_ALGORITHM_PATHS} ${PROJECT_SOURCE_DIR}/cmake/extract_code.cmake
  COMMENT "Taking the page's algorithm from the library's source" VERBATIM)
