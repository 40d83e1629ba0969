// storylm's node entry: `node build-web/storylm.mjs VERB ...`, the CLI built
// for WebAssembly (storylm.js, CommonJS: emscripten 3.1.6's ES module output
// reads __dirname, which an ES module lacks). It reads and writes the host's
// files and takes the verb and its flags from node's own arguments.
import { createRequire } from 'module';

createRequire(import.meta.url)('./storylm.js');
