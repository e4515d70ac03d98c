/**
 * A bundle described for people (runtime/describe.py): its labels, privacy facts, releases,
 * encoder and sizes, JSON-ready, every text from the bundle escaped. Reading a bundle's facts
 * does not start the encoder.
 */
import type { Bundle } from "./reader.js";
import { pyG, type Value } from "./pyrepr.js";
import { escape } from "./text.js";

/** JSON-ready and escaped copy of informational values from the bundle (any msgpack). */
export function plain(v: Value, depth = 0): unknown {
  if (typeof v === "string") return escape(v);
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v === null || typeof v === "boolean") return v;
  if (depth >= 8) return "...";
  if (v instanceof Uint8Array) return `<${v.length} bytes>`;
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1));
  return Object.fromEntries([...v].map(([k, x]) => [escape(k), plain(x, depth + 1)]));
}

/** Python's format(x, ".10g"): 1.6, not 1.5999999999999996. */
export function g10(x: number): string {
  return pyG(x, 10);
}

/** One line: the guarantee in the bundle's own words. */
export function privacySummary(b: Bundle): string {
  const parts = Object.entries(b.releases)
    .map(([name, r]) => `${name} eps ${g10(r.epsilon)} (scale ${g10(r.noise_scale)})`)
    .join(", ");
  return `epsilon = ${g10(b.epsilon)}, delta = 0 (pure DP) per ${escape(String(b.privacy.get("privacy_unit")))}, spent on ` +
    `${parts}; discrete Laplace noise`;
}

/** What the bundle is, as runtime/describe.py's bundle_info says it (sizes in bytes). */
export function bundleInfo(b: Bundle, fileBytes?: number): Record<string, unknown> {
  const e = b.encoder;
  const bytes = (...xs: (ArrayLike<number> & { byteLength: number } | null)[]): number =>
    xs.reduce((n, x) => n + (x === null ? 0 : x.byteLength), 0);
  const sizes: Record<string, number> = {
    encoder: e.model.length + e.weights.length + new TextEncoder().encode(e.tokenizerJson).length,
  };
  if (b.classCounts) sizes["class_statistics"] = bytes(b.classCounts, b.classSums, b.origin, b.projection);
  if (b.votes) sizes["vote_tables"] = bytes(b.votes, b.hyperplanes, b.offsets);
  if (b.prior) sizes["prior"] = bytes(b.prior);
  if (fileBytes !== undefined) sizes["file"] = fileBytes;
  const releases = Object.fromEntries(Object.entries(b.releases).map(([name, r]) => [name, plain(new Map(
    Object.entries(r).filter(([, v]) => v !== undefined).map(([k, v]) => [k, typeof v === "number" && k !== "epsilon" &&
      k !== "noise_scale" && k !== "clip_l1" ? BigInt(v) : v as Value]),
  ))]));
  return {
    format_version: b.version.join("."),
    labels: b.labels.map(escape),
    label_descriptions: b.labelDescriptions === null ? null : b.labelDescriptions.map(escape),
    privacy: plain(b.privacy),
    releases,
    hashing: b.hyperplanes === null ? null : { tables: b.dims.T, bits: b.dims.H, seed: b.seed === null ? null :
      plain(b.seed), offsets: b.offsets !== null },
    subspace_dim: b.projection === null ? null : b.dims.k,
    scoring: b.scoring === null ? null : { ...b.scoring },
    encoder: { format: e.format, dim: e.dim, max_length: e.maxLength, text_prefix: escape(e.textPrefix),
      ...(e.facts === null ? {} : plain(e.facts) as object) },
    exporter: b.exporter === null ? null : plain(b.exporter),
    components: [["centroids", b.classSums !== null], ["votes", b.votes !== null], ["prior", b.prior !== null]]
      .filter(([, there]) => there).map(([n]) => n),
    sizes_bytes: sizes,
  };
}
