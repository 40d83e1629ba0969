# The page's API in a Web Worker (wasm/web.c, web/worker.js): the server's
# core, every file of src/server but those that speak HTTP through
# libmicrohttpd, answering a request without a socket, as
# build-web/storylm_web.js and storylm_web.wasm (one thread, no streams),
# with the tab's training (wasm/train_web.c, run by web/train_worker.js:
# storylm train a slice of steps at a time); and the page's algorithm.json
# beside them. scripts/build_web puts them on the static site.
file(GLOB STORYLM_WEB_CORE CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/server/*.c)
list(FILTER STORYLM_WEB_CORE EXCLUDE REGEX "/(server|guard|metrics|sse_http|upload|openai[a-z_]*)[.]c$")
add_executable(storylm_web ${PROJECT_SOURCE_DIR}/wasm/web.c ${PROJECT_SOURCE_DIR}/wasm/train_web.c ${STORYLM_WEB_CORE})
target_include_directories(storylm_web PRIVATE ${PROJECT_SOURCE_DIR}/src/server)
target_link_libraries(storylm_web PRIVATE storylm_lib)
set_target_properties(storylm_web PROPERTIES SUFFIX ".js")
target_link_options(storylm_web PRIVATE -sMODULARIZE=1 -sEXPORT_NAME=createStorylm -sENVIRONMENT=worker,node
  -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=64MB -sTOTAL_STACK=8MB -sFORCE_FILESYSTEM=1
  -sEXPORTED_FUNCTIONS=_slm_web_open,_slm_web_answer,_slm_train_web_open,_slm_train_web_steps,_slm_train_web_close,_malloc,_free
  -sEXPORTED_RUNTIME_METHODS=FS,ccall,UTF8ToString,getValue)
include(${PROJECT_SOURCE_DIR}/cmake/algorithm.cmake)
add_custom_target(storylm_web_algorithm ALL DEPENDS ${STORYLM_WEB_EXTRA}/algorithm.json)
