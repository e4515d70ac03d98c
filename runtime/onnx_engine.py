"""The onnxruntime engine: runs a bundle's ONNX encoder, one text per call.

The ONNX graph has mean pooling and L2 normalisation inside it and returns one unit vector
per text. Texts are never batched together: the int8 MatMulNBits kernels pick their compute
path by the number of rows they get, so the same text embedded inside a batch differs from
it embedded alone (measured: up to 0.008, even in a batch of identical copies), which would
flip SimHash bits for a few percent of texts. One text per run makes an embedding a function
of the text alone (see runtime.encoder for how throughput comes back).

A bundle may come from anywhere, so every session runs under budgets (docs/reliability.md
section 5): onnxruntime's telemetry is off before it is first imported (it would otherwise
write a device id and an event queue under ~/.cache), every tensor comes from an arena capped
at `schema.ENGINE_ARENA_BYTES` (a graph that expands a tensor to gigabytes fails that run
instead of taking the device's memory), session creation can be cancelled, and a run that
exceeds its time budget is terminated from a watchdog thread. The graph itself was checked
against the encoder family before it gets here (runtime.bundle.model_family).

The capped arena is one per process, shared by every session and every concurrent run: it
bounds a hostile graph on a device running a few texts at once. The exporter runs its own,
trusted encoder on many texts at once (one per core), where long texts meeting in the shared
arena would exhaust it and fail the build on what the records hold; it asks for sessions with
their own arenas instead (``shared_arena=False``).
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time as time_module
from typing import Any, Sequence

import numpy as np

from runtime.bundle.model_family import check_onnx
from runtime.bundle.schema import NUMBER_DIGITS, ONNX_SESSION_CONFIG, WEIGHTS_LOCATION, EncoderSpec
from runtime.limits import ENGINE_ARENA_BYTES, LOAD_RUN_SECONDS, QUERY_RUN_SECONDS, WALL_FACTOR
from runtime.errors import BundleError, one_line

INSTALL = "pip install 'onnxruntime>=1.22'"

# onnxruntime >= 1.2x on Linux starts a telemetry client when it is imported (a device id and
# an event database under ~/.cache/Microsoft/DeveloperTools); this variable, read at import,
# keeps it from starting. Set here, at the runtime's import, so that it precedes the first
# `import onnxruntime` the runtime makes (an application that imported onnxruntime earlier
# must set it itself). An explicit choice in the environment is left alone.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def _onnxruntime() -> Any:
    """onnxruntime, imported with telemetry and its own stderr logging off (failures reach the
    caller as exceptions, reported in one line)."""
    import onnxruntime as ort

    ort.disable_telemetry_events()
    ort.set_default_logger_severity(4)
    return ort


_arena_lock = threading.Lock()
_arena_registered = False


def _register_capped_arena(ort: Any) -> bool:
    """Register, once per process, the CPU arena that sessions with ``session.use_env_allocators``
    share, capped at ENGINE_ARENA_BYTES. False if onnxruntime refuses (an application
    registered its own): sessions then use their own uncapped arenas."""
    global _arena_registered
    with _arena_lock:
        if not _arena_registered:
            try:
                info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
                # max_mem, extend strategy 1 (kSameAsRequested: no doubling past the cap), defaults.
                ort.create_and_register_allocator(info, ort.OrtArenaCfg(ENGINE_ARENA_BYTES, 1, -1, -1))
                _arena_registered = True
            except Exception:  # noqa: BLE001 - already registered, or an onnxruntime without the API
                _arena_registered = False
        return _arena_registered


def _session_options(threads: int | None, shared_arena: bool = True):
    ort = _onnxruntime()
    so = ort.SessionOptions()
    # 0 lets onnxruntime use every core; 1 is the Raspberry Pi / background-service case.
    so.intra_op_num_threads = 0 if threads is None else int(threads)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # The contract's session settings (format/1/schema.json "encoder"): constant folding computes
    # a graph's constant subgraphs while the session is created, where the load-cancellation
    # flag is not looked at (an in-family chain of MatMuls of initializers kept the load busy for
    # 80 s of CPU past its 3 s budget); the exporter's encoders lose nothing without it.
    for key, value in ONNX_SESSION_CONFIG.items():
        so.add_session_config_entry(key, value)
    so.log_severity_level = 4
    if shared_arena:
        _budget_options(ort, so)
    return so


def _budget_options(ort: Any, so: Any) -> None:
    """The memory budget: every tensor from the shared capped arena."""
    if _register_capped_arena(ort):
        so.add_session_config_entry("session.use_env_allocators", "1")


def uses_shared_arena(so: Any) -> bool:
    """Whether a session with these options (a session's own: ``get_session_options()``)
    allocates from the shared capped arena."""
    try:
        return so.get_session_config_entry("session.use_env_allocators") == "1"
    except Exception:  # noqa: BLE001 - onnxruntime raises when the entry was never set
        return False


class _Watchdog:
    """One daemon thread that stops onnxruntime work past its budget: a run through its
    RunOptions.terminate, a session creation through its load-cancellation flag.

    A budget is work, not wall time (format/1/schema.json "encoder"): the CPU time of the
    thread that started the work, which a machine busy with other processes does not inflate,
    so a slow moment cannot refuse a good bundle. Wall time is the backstop, at WALL_FACTOR
    times the budget (work that waits rather than computes is stopped too), and the whole
    budget where the platform has no per-thread CPU clock. Work registers on entry and leaves
    on exit; while any is registered the thread looks at the clocks every POLL_SECONDS."""

    POLL_SECONDS = 0.02

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._live: dict[int, tuple[Any, int | None, float, float, float]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def start(self, seconds: float, stop: Any) -> int:
        """Call ``stop()`` if still registered once the calling thread has used ``seconds`` of
        CPU time (or WALL_FACTOR times that of wall time); returns the registration."""
        clock = _thread_clock()
        cpu = time_module.clock_gettime(clock) if clock is not None else 0.0
        wall = time_module.monotonic() + seconds * (WALL_FACTOR if clock is not None else 1.0)
        with self._cond:
            key = next(self._ids)
            self._live[key] = (stop, clock, cpu, seconds, wall)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="dpedge-engine-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()
            return key

    def finish(self, key: int) -> bool:
        """Unregister; True if the budget had already run out (the work was stopped)."""
        with self._cond:
            return self._live.pop(key, None) is None

    def _loop(self) -> None:
        with self._cond:
            while True:
                if not self._live:
                    self._cond.wait()
                    continue
                now = time_module.monotonic()
                for key, (stop, clock, cpu, seconds, wall) in list(self._live.items()):
                    if now > wall or (clock is not None and _used(clock, cpu) > seconds):
                        del self._live[key]
                        stop()
                self._cond.wait(self.POLL_SECONDS)


def _thread_clock() -> int | None:
    """The calling thread's CPU-time clock, or None where the platform has none (Windows)."""
    try:
        return time_module.pthread_getcpuclockid(threading.get_ident())
    except (AttributeError, OSError):
        return None


def _used(clock: int, since: float) -> float:
    """CPU seconds a thread's clock has run since ``since`` (0 once the thread is gone)."""
    try:
        return time_module.clock_gettime(clock) - since
    except OSError:
        return 0.0


_watchdog = _Watchdog()


class EngineOverBudget(RuntimeError):
    """A run (or a load) that went over the engine's memory or time budget: `engine.budget` at
    load, as the contract and the other readers say, never `engine.load`."""


class EngineTimeout(EngineOverBudget):
    """A run stopped at its deadline (the engine's time budget)."""


#: How onnxruntime says a tensor did not fit the capped arena (or the machine): a memory budget.
_OUT_OF_MEMORY = re.compile(r"BFCArena|Failed to allocate memory|is smaller than requested bytes|bad_alloc")


def over_memory(exc: BaseException) -> bool:
    """Whether onnxruntime's error is an allocation that did not fit the arena's cap."""
    return bool(_OUT_OF_MEMORY.search(str(exc)))


def _identity(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _with_weights(ort: Any, so: Any, encoder: EncoderSpec) -> tuple[bytes, Any]:
    """The model bytes to give onnxruntime, with ``so`` set up to find the initializers' data,
    and the in-memory weights it was given (None when it maps them), which must outlive it.

    Left in the bundle file (`bundle.load`): the external-data entries are rewritten in place,
    at the same length, to name the bundle file (as "././...name", relative to its folder,
    which onnxruntime then confines them to) and its absolute offsets, so that onnxruntime
    maps the weights instead of copying them (about 45 MiB less at peak, docs/runtime-perf.md).
    In memory (`bundle.unpack`, or a name too long to fit): handed over under the placeholder's
    name, which onnxruntime copies.
    """
    refs = check_onnx(encoder.model, encoder.weights_file.length if encoder.weights_file else len(encoder.weights),
                      encoder.family)
    if not refs:
        return encoder.model, None
    where = encoder.weights_file
    name = os.path.basename(where.path).encode() if where else b""
    pad = len(WEIGHTS_LOCATION) - len(name)
    if where is not None and pad >= 3:
        location = b"./" * (pad // 2) + name if pad % 2 == 0 else b"./" * ((pad - 3) // 2) + b".//" + name
        model = bytearray(encoder.model)
        for r in refs:
            model[r.location_at:r.location_at + len(location)] = location
            model[r.offset_at:r.offset_at + NUMBER_DIGITS] = b"%0*d" % (NUMBER_DIGITS, where.offset + r.offset)
        so.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                    os.path.dirname(where.path))
        return bytes(model), None
    weights = encoder.weights
    if where is not None:  # the name does not fit: read the weights into memory after all
        with open(where.path, "rb") as f:
            f.seek(where.offset)
            weights = f.read(where.length)
        if len(weights) != where.length or _identity(where.path) != where.identity:
            raise BundleError("engine.load", "encoder.weights", f"{where.path}: the bundle file changed while it was "
                                                                "being loaded")
    buffer = np.frombuffer(weights, np.uint8)
    so.add_external_initializers_from_files_in_memory([WEIGHTS_LOCATION], [buffer], [len(weights)])
    return encoder.model, buffer


class OnnxRuntimeEngine:
    """One onnxruntime session; `run` is thread-safe, so every worker shares it.

    The session maps or copies what it needs, so one session serves every thread.
    ``shared_arena`` (default True) allocates every tensor from the process's shared arena
    capped at ENGINE_ARENA_BYTES, the bound on a hostile bundle; False gives the session its
    own, uncapped arena, for an encoder the caller trusts (the exporter's own), so that the
    number of texts run at once cannot exhaust the cap.
    """

    thread_safe = True

    def __init__(self, encoder: EncoderSpec, threads: int | None, *, shared_arena: bool = True):
        ort = _onnxruntime()
        so = _session_options(threads, shared_arena)
        # onnxruntime reads in-memory weights through a pointer: the buffer lives as long as the session.
        model, self._weights = _with_weights(ort, so, encoder)
        key = _watchdog.start(LOAD_RUN_SECONDS, lambda: so.set_load_cancellation_flag(True))
        try:
            # No fallback: onnxruntime's Python wrapper would print a banner on stdout (into --json
            # output) and create the same CPU session a second time after any load error.
            self._session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"], enable_fallback=0)
            graph_inputs = {i.name for i in self._session.get_inputs()}
            outputs = {o.name for o in self._session.get_outputs()}
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            stopped = _watchdog.finish(key)
            why = f"loading took more than {LOAD_RUN_SECONDS:g} s of work" if stopped else one_line(exc)
            raise BundleError("engine.budget" if stopped or over_memory(exc) else "engine.load", "encoder.model",
                              f"the bundle's ONNX encoder cannot be loaded by onnxruntime {ort.__version__}: {why} "
                              f"(dpedge needs onnxruntime >= 1.22: {INSTALL})") from None
        _watchdog.finish(key)
        where = encoder.weights_file
        if where is not None and _identity(where.path) != where.identity:
            raise BundleError("engine.load", "encoder.weights", f"{where.path}: the bundle file changed while it was "
                                                                "being loaded")
        if graph_inputs != set(encoder.inputs):
            raise BundleError("engine.io", "encoder.inputs", f"encoder graph inputs {sorted(graph_inputs)} differ from "
                                                             f"the bundle's {sorted(encoder.inputs)}")
        if encoder.output not in outputs:
            raise BundleError("engine.io", "encoder.output", f"encoder graph has no output {encoder.output!r}")
        self._inputs = tuple(encoder.inputs)
        self._output = encoder.output
        self._ort = ort
        #: Whether the session allocates from the shared capped arena, as the session itself
        #: states (False also when onnxruntime refused to register it: `_register_capped_arena`).
        self.shared_arena = uses_shared_arena(self._session.get_session_options())
        # onnxruntime's Python wrapper keeps the model bytes only to rebuild the session when its
        # providers change, which this CPU-only session never does.
        if getattr(self._session, "_model_bytes", None) is not None:
            self._session._model_bytes = None

    def embed_one(self, token_ids: Sequence[int], seconds: float = QUERY_RUN_SECONDS) -> np.ndarray:
        """One run; raises RuntimeError (one line) if it fails or takes longer than ``seconds``."""
        ids = np.asarray([token_ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        return self._timed_run({k: feeds[k] for k in self._inputs}, seconds)

    def _timed_run(self, feeds: dict[str, np.ndarray], seconds: float) -> np.ndarray:
        """Run under the time budget: the watchdog sets RunOptions.terminate at the deadline."""
        options = self._ort.RunOptions()
        options.log_severity_level = 4
        key = _watchdog.start(seconds, lambda: setattr(options, "terminate", True))
        try:
            out = self._session.run([self._output], feeds, options)[0]
        except Exception as exc:  # noqa: BLE001 - onnxruntime's Fail, RuntimeException, InvalidArgument...
            if _watchdog.finish(key):
                raise EngineTimeout(f"the run took more than {seconds:g} s of work and was stopped") from None
            if over_memory(exc):
                raise EngineOverBudget(f"the run needed more memory than the engine's budget of "
                                       f"{ENGINE_ARENA_BYTES // 2**20} MiB: {one_line(exc)}") from None
            raise RuntimeError(one_line(exc)) from None
        _watchdog.finish(key)
        return out
