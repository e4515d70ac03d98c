/**
 * A bundle described for people: its labels, privacy facts, releases, encoder and sizes,
 * JSON-ready, every string from the bundle escaped. Reading a bundle's facts does not start the
 * encoder.
 */
import { Bin, type Value } from "./container.js";
import type { Bundle } from "./reader.js";
import { escape } from "./text.js";

/** JSON-ready and escaped copy of values from the bundle (any msgpack). */
export function plain(v: Value, depth = 0): unknown {
  if (typeof v === "string") return escape(v);
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v === null || typeof v === "boolean") return v;
  if (v instanceof Bin) return `<${v.length} bytes>`;
  if (depth >= 8) return "...";
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1));
  return Object.fromEntries([...v].map(([k, x]) => [escape(k), plain(x, depth + 1)]));
}

/** A number with at most 10 significant digits (1.6, not 1.5999999999999996). */
const short = (x: number): string => String(Number(x.toPrecision(10)));

/** One line: the guarantee in the bundle's own words. */
export function privacySummary(b: Bundle): string {
  const parts = Object.values(b.releases).map((r) => `${r.statistic} eps ${short(r.epsilon)} (scale ${short(r.noise_scale)})`);
  const batches = b.batches > 1 ? ` in each of ${b.batches} disjoint batches, summed` : "";
  return `epsilon = ${short(b.epsilon)}, delta = 0 (pure DP) per ${escape(String(b.privacy.get("privacy_unit")))}, spent on ` +
    `${parts.join(", ")}${batches}; discrete Laplace noise`;
}

/** What the bundle is (sizes in bytes). */
export function bundleInfo(b: Bundle, fileBytes?: number): Record<string, unknown> {
  const e = b.encoder;
  const bytes = (...xs: ({ byteLength: number } | null)[]): number => xs.reduce((n, x) => n + (x?.byteLength ?? 0), 0);
  // A statistics bundle's encoder is in its pack, not in the file.
  const sizes: Record<string, number> = {
    [b.encoderPack === null ? "encoder" : "encoder_pack"]: bytes(e.model, e.weights, new TextEncoder().encode(e.tokenizerJson)),
  };
  if (b.classCounts) sizes["class_statistics"] = bytes(b.classCounts, b.classSums, b.origin, b.projection);
  if (b.votes) sizes["vote_tables"] = bytes(b.votes, b.hyperplanes, b.offsets);
  if (b.prior) sizes["prior"] = bytes(b.prior);
  if (fileBytes !== undefined) sizes["file"] = fileBytes;
  return {
    format_version: b.version.join("."),
    labels: b.labels.map(escape),
    label_descriptions: b.labelDescriptions?.map(escape) ?? null,
    privacy: plain(b.privacy),
    releases: Object.fromEntries(Object.values(b.releases).map((r) => [r.statistic, { ...r, mechanism: escape(r.mechanism) }])),
    hashing: b.hyperplanes === null ? null : { tables: b.dims.T, bits: b.dims.H, seed: b.seed === null ? null : plain(b.seed),
      offsets: b.offsets !== null },
    subspace_dim: b.projection === null ? null : b.dims.k,
    scoring: b.scoring === null ? null : { ...b.scoring },
    encoder: { format: e.format, dim: e.dim, max_length: e.maxLength, text_prefix: escape(e.textPrefix),
      pack_sha256: b.encoderPack === null ? null : Array.from(b.encoderPack, (x) => x.toString(16).padStart(2, "0")).join(""),
      ...(e.facts === null ? {} : plain(e.facts) as object) },
    exporter: b.exporter === null ? null : plain(b.exporter),
    components: [["centroids", b.classSums], ["votes", b.votes], ["prior", b.prior]].filter(([, x]) => x !== null).map(([n]) => n),
    sizes_bytes: sizes,
  };
}
