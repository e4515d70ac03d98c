// Loaded into the demo page by the worker tests beside runtime.js: the Web Worker classifier
// (the page's own vendor/worker.js) made reachable from page.evaluate at globalThis.dpedgeWorker.
import * as worker from "/vendor/worker.js";

globalThis.dpedgeWorker = worker;
