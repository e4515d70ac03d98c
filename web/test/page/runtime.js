// Loaded into the demo page by the browser tests: the page's own runtime module, made reachable
// from page.evaluate (whose callbacks the test runner compiles, so they cannot import it themselves).
import * as runtime from "/vendor/dpedge.js";

globalThis.dpedgeRuntime = runtime;
