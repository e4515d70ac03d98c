/**
 * onnxruntime-node in a child process, under the contract's budgets (schema.json "encoder").
 *
 * onnxruntime-node 1.30 runs a session's `run` (and session creation) synchronously on the
 * calling thread and reads only logSeverityLevel and tag from its RunOptions (`terminate` is
 * honoured by the WebAssembly backend alone), so nothing in the process that waits can stop a
 * run; a worker thread cannot be stopped inside native code either. A child process can: the
 * session lives in one, each call has a budget, and past it the child is killed (SIGKILL),
 * which frees its threads and memory at once. The budget is work, as in every reader
 * (schema.json "encoder"): where /proc exists (Linux), the child's CPU time, which other load on
 * the machine does not use up, with wall time as the backstop at wall_factor times it; elsewhere
 * wall time alone. Where /proc exists, the child's resident memory is sampled too, and a call
 * that grows it by more than its budget is killed. A killed child is started again, and the
 * model loaded again, at the next query.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { BudgetExceeded, WrongIO, type Engine, type EngineIO } from "../engine.js";
import { onnxSessionExtra, SCHEMA } from "../contract.js";
import { WEIGHTS_LOCATION, type OrtSessionOptions } from "./onnxruntime.js";

/** The child: one session, one message at a time (CommonJS, run with `node -e`). */
const CHILD = `"use strict";
const ort = require(process.env.DPEDGE_ONNXRUNTIME_NODE);
let session = null, io = null;
process.on("disconnect", () => process.exit(0));
process.on("message", async (m) => {
  try {
    if (m.load) {
      session = await ort.InferenceSession.create(m.load.model, m.load.options);
      io = m.load.io;
      process.send({ inputs: session.inputNames, outputs: session.outputNames });
      return;
    }
    const n = m.ids.length;
    const fill = { input_ids: (i) => BigInt(m.ids[i]), attention_mask: () => 1n, token_type_ids: () => 0n };
    const feeds = {};
    for (const name of io.inputs) feeds[name] = new ort.Tensor("int64", BigInt64Array.from({ length: n }, (_, i) => fill[name](i)), [1, n]);
    const out = (await session.run(feeds, [io.output]))[io.output];
    const ok = out.type === "float32" && out.dims.length === 2 && out.dims[0] === 1;
    process.send({ embedding: ok ? Float32Array.from(out.data) : new Float32Array(0) });
  } catch (e) {
    process.send({ error: String((e && e.message) || e) });
  }
});
process.send({ ready: (ort.env.versions && (ort.env.versions.node || ort.env.versions.common)) || "?" });
`;

interface Reply {
  ready?: string;
  inputs?: string[];
  outputs?: string[];
  embedding?: Float32Array;
  error?: string;
}

/** CPU seconds a process has used (user and system), or null where /proc cannot tell (not Linux). */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return null;
  }
}

/** Resident memory of a process in bytes, or null where /proc cannot tell (not Linux). */
function residentBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s*(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "latin1"));
    return m === null ? null : Number(m[1]) * 1024;
  } catch {
    return null;
  }
}

export interface ProcessEngineOptions {
  /** Resolved path of onnxruntime-node's main module. */
  readonly modulePath: string;
  /** Session options added to the engine's own (threads). */
  readonly session?: OrtSessionOptions;
  /** How much one run may grow the child's resident memory (bytes); loading may grow it by 8 times the encoder's bytes more. */
  readonly memoryBytes: number;
  /** How often memory is sampled during a call (milliseconds). */
  readonly sampleMs?: number;
}

export class NodeProcessEngine implements Engine {
  readonly formats = ["onnx"] as const;
  readonly bounded = residentBytes(process.pid) === null ? "time" : "time and memory";
  name = "onnxruntime-node (child process)";
  private child: ChildProcess | null = null;
  private stderr = "";
  private queue: Promise<unknown> = Promise.resolve();
  private loaded: { message: object; seconds: number; memory: number } | null = null;

  constructor(private readonly options: ProcessEngineOptions) {}

  /** Start the child and wait until onnxruntime-node is loaded in it (not part of any budget: nothing of the bundle runs yet). */
  private async start(): Promise<ChildProcess> {
    const child = spawn(process.execPath, ["-e", CHILD], {
      stdio: ["ignore", "ignore", "pipe", "ipc"], serialization: "advanced",
      env: { ...process.env, DPEDGE_ONNXRUNTIME_NODE: this.options.modulePath },
    });
    this.stderr = "";
    child.stderr!.on("data", (b: Buffer) => (this.stderr = (this.stderr + b.toString("utf-8")).slice(-500)));
    (child.stderr as unknown as { unref(): void }).unref(); // an idle engine does not keep Node running (its channel is unref'd between calls)
    this.child = child;
    const reply = await this.exchange(child, null, Infinity, Infinity);
    this.name = `onnxruntime-node ${reply.ready} (child process)`;
    return child;
  }

  /** Send `message` (null: wait for the first message) and wait for the reply within `seconds` and the memory budget. */
  private exchange(child: ChildProcess, message: object | null, seconds: number, memory: number): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const baseline = Number.isFinite(memory) ? residentBytes(child.pid ?? 0) : null;
      const cpu0 = Number.isFinite(seconds) ? cpuSeconds(child.pid ?? 0) : null;
      const stop = (why: Error): void => {
        done();
        child.kill("SIGKILL");
        if (this.child === child) this.child = null;
        reject(why);
      };
      const overBudget = (): Error | null => {
        const cpu = cpu0 === null ? null : cpuSeconds(child.pid ?? 0);
        if (cpu !== null && cpu - cpu0! > seconds) {
          return new BudgetExceeded(`the run took more than ${seconds} s of work and was stopped`);
        }
        const now = baseline === null ? null : residentBytes(child.pid ?? 0);
        return now !== null && now - baseline! > memory
          ? new BudgetExceeded(`the engine's memory grew by ${now - baseline!} bytes, over its budget of ${memory}`) : null;
      };
      const onReply = (r: Reply): void => {
        const over = overBudget();
        if (over !== null) return stop(over);
        done();
        resolve(r);
      };
      const onExit = (code: number | null, signal: string | null): void => {
        done();
        if (this.child === child) this.child = null;
        reject(new Error(`the engine process ended (${signal ?? `exit code ${code}`})${this.stderr ? `: ${this.stderr}` : ""}`));
      };
      const wall = seconds * (cpu0 === null ? 1 : SCHEMA.encoder.wall_factor);
      const timer = Number.isFinite(seconds)
        ? setTimeout(() => stop(new BudgetExceeded(`the run took longer than ${wall} s and was stopped`)), wall * 1000) : null;
      const sampler = message === null || (baseline === null && cpu0 === null) ? null : setInterval(() => {
        const over = overBudget();
        if (over !== null) stop(over);
      }, this.options.sampleMs ?? 10);
      function done(): void {
        if (timer !== null) clearTimeout(timer);
        if (sampler !== null) clearInterval(sampler);
        child.off("message", onReply);
        child.off("exit", onExit);
        child.unref();
        child.channel?.unref();
      }
      child.on("message", onReply);
      child.on("exit", onExit);
      child.ref();
      child.channel?.ref();
      if (message !== null) child.send(message);
    });
  }

  /** One call at a time, in order; a child that was killed is started again, with the model loaded again. */
  private call(message: object, seconds: number, memory: number): Promise<Reply> {
    const send = async (child: ChildProcess, m: object, s: number, bytes: number): Promise<Reply> => {
      const reply = await this.exchange(child, m, s, bytes);
      if (reply.error !== undefined) throw new Error(reply.error);
      return reply;
    };
    const next = this.queue.then(async () => {
      let child = this.child;
      if (child === null) {
        child = await this.start();
        const again = this.loaded;
        if (again !== null && message !== again.message) await send(child, again.message, again.seconds, again.memory);
      }
      return send(child, message, seconds, memory);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  async load(model: Uint8Array, weights: Uint8Array, io: EngineIO, seconds: number): Promise<void> {
    const options = {
      graphOptimizationLevel: "all", interOpNumThreads: 1, logSeverityLevel: 4, extra: onnxSessionExtra(),
      ...this.options.session,
      ...(weights.length ? { externalData: [{ path: WEIGHTS_LOCATION, data: weights }] } : {}),
    };
    const message = { load: { model, options, io: { inputs: io.inputs, output: io.output } } };
    // Session creation keeps the model several times while it optimizes and pre-packs the graph
    // (4.7 times the exporter's encoder, measured): its budget grows with the encoder's bytes.
    const memory = this.options.memoryBytes + 8 * (model.length + weights.length);
    const reply = await this.call(message, seconds, memory);
    const have = [...reply.inputs!].sort().join(", ");
    const want = [...io.inputs].sort().join(", ");
    if (have !== want) throw new WrongIO("encoder.inputs", `the model's inputs are ${have}, the bundle's ${want}`);
    if (!reply.outputs!.includes(io.output)) throw new WrongIO("encoder.output", `the model has no output ${io.output}`);
    this.loaded = { message, seconds, memory };
  }

  async embed(tokenIds: readonly number[], seconds: number): Promise<Float32Array> {
    if (this.loaded === null) throw new Error("the engine has no model loaded");
    return (await this.call({ ids: tokenIds }, seconds, this.options.memoryBytes)).embedding!;
  }

  async release(): Promise<void> {
    this.loaded = null;
    this.child?.kill("SIGKILL");
    this.child = null;
  }
}
