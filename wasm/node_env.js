// Run before main (emcc --pre-js): the program sees the host's environment
// (HOME, STORYLM_CACHE, ...), not emscripten's stand-in with HOME=/home/web_user,
// so files land where the native build puts them.
Module['preRun'] = (Module['preRun'] || []).concat([function () { Object.assign(ENV, process.env); }]);
