"""A second bundle decoder, written from docs/bundle-format.md alone (no runtime import).

It reads the outer map and the payload with a plain msgpack parser, and implements the
document's hashing (section 4), Algorithm 2 (section 5) and the blend of section 9 ("Scoring a
bundle with class statistics or a prior": the votes, the three centroid rules, the prior with
the "max" and "linear" boosts, 4.0's pull toward the descriptions), for formats 1.x, 2.x, 3.0
and 4.0, with or without vote tables:
anything the runtime does that this file does not is a gap in the document.
tests/test_independent_decoder.py checks that it gives every text the runtime's label and
scores. The encoder is an engine, not part of the format's arithmetic: the caller passes
embeddings.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgpack
import numpy as np


def _array(record: dict[str, Any]) -> np.ndarray:
    """Section 5: explicit little-endian dtype, shape, C-order bytes."""
    return np.frombuffer(record["data"], dtype=np.dtype(record["dtype"])).reshape(record["shape"])


class Decoder:
    def __init__(self, data: bytes):
        outer = msgpack.unpackb(data, raw=False)                       # section 1
        assert outer["format"] == "dpedge-bundle"
        self.major = outer["version"][0]
        assert self.major in (1, 2, 3, 4)
        assert hashlib.sha256(outer["payload"]).digest() == outer["checksum"]["digest"]
        p = msgpack.unpackb(outer["payload"], raw=False)                # section 2
        self.labels = p["labels"]
        privacy = p["privacy"]
        self.epsilon = float(privacy["epsilon"])
        self.sums_release = next((r for r in privacy.get("releases") or [] if r["statistic"] == "class_sums"), None)
        per_unit = privacy.get("max_records_per_unit")                  # section 3: absent means 1
        self.per_unit = 1.0 if per_unit is None else float(per_unit)
        # Section 2: lsh and votes are required before 3.0, optional (and together) from it.
        has_tables = self.major < 3 or "lsh" in p or "votes" in p
        self.planes = self.offsets = self.votes = None
        if has_tables:
            lsh = p["lsh"]
            self.planes = _array(lsh["hyperplanes"]).astype(np.float64)     # (T, H, D)
            self.offsets = (_array(lsh["offsets"]).astype(np.float64) if "offsets" in lsh
                            else np.zeros(self.planes.shape[:2]))
            self.votes = _array(p["votes"]).astype(np.int64)                 # (T, 2^H, C)
            self.dim = int(lsh["dim"])
        else:
            self.dim = int(p["encoder"]["dim"])                              # D without tables
        cs = p.get("class_stats")
        self.stats = None if cs is None else {k: _array(cs[k]).astype(np.float64)
                                              for k in ("origin", "projection", "sums", "counts")}
        assert self.votes is not None or self.stats is not None              # something classifies
        self.prior = None if p.get("prior") is None else _array(p["prior"]["embeddings"]).astype(np.float64)
        # Section 9, "Weights": absent names (or no map, or nil) take these values.
        w = {"votes": 1.0, "centroids": 1.0, "prior": 1.0, "centroid_temperature": 0.05, "prior_temperature": 0.05,
             "centroid_clip_l1": 0.0, "prior_records_per_class": 0.0, "description_pull": 0.0}
        scoring = p.get("scoring") or {}
        for k in w:
            if k in scoring:
                w[k] = float(scoring[k])
        self.w = w
        self.rule = scoring.get("centroid_rule", "cosine")
        self.boost_rule = scoring.get("prior_boost_rule", "max")
        assert self.rule in ("cosine", "gaussian", "cosine_public") and self.boost_rule in ("max", "linear")
        assert self.boost_rule != "linear" or self.stats is not None

    @property
    def has_tables(self) -> bool:
        return self.votes is not None

    def buckets(self, x: np.ndarray) -> list[int]:
        """Section 4: bit h of table t is 1 iff <x, r_th> > o_th; hyperplane 0 is the low bit."""
        out = []
        for t in range(self.planes.shape[0]):
            u = 0
            for h in range(self.planes.shape[1]):
                if float(np.dot(x, self.planes[t, h])) > self.offsets[t, h]:
                    u += 1 << h
            out.append(u)
        return out

    def scores(self, embedding: np.ndarray) -> np.ndarray:
        x = np.asarray(embedding, np.float64)
        if self.stats is None and self.prior is None:                   # section 5, Algorithm 2
            u = self.buckets(x)
            return np.array([self.votes[t, u[t]] for t in range(len(u))]).sum(axis=0).astype(np.float64)
        score = np.zeros(len(self.labels))
        if self.has_tables:                                             # the votes component
            u = self.buckets(x)
            cells = np.array([self.votes[t, u[t]] for t in range(len(u))])  # (T, C)
            positive = np.maximum(cells, 0).sum(axis=0).astype(np.float64)  # each cell below zero reads 0
            score = score + self.w["votes"] * positive / max(positive.sum(), 1e-12)
        if self.stats is not None:
            score = score + self.w["centroids"] * self._centroids(x)
        if self.prior is not None:
            score = score + self.w["prior"] * self.boost() * self._prior(x)
        return score

    def label(self, embedding: np.ndarray) -> str:
        s = self.scores(embedding)
        return self.labels[int(np.flatnonzero(s == s.max())[0])]       # lowest index on a tie

    def boost(self) -> float:
        """Section 9, "Prior component": the "max" (2.x) or "linear" (3.0) rule."""
        r, c = self.w["prior_records_per_class"], len(self.labels)
        n = None if self.stats is None else max(float(self.stats["counts"].sum()), 1.0)  # unclamped counts
        if self.boost_rule == "linear":
            return min(1e6, (r * c * self.per_unit) / (self.epsilon * n))
        b = max(1.0, 1.0 / self.epsilon)
        if r > 0 and n is not None:
            b = max(b, r * c / (self.epsilon * n))
        return min(b, 1e6)

    def _centroids(self, x: np.ndarray) -> np.ndarray:
        st = self.stats
        y = st["projection"] @ x - st["projection"] @ st["origin"]
        if self.rule == "cosine_public":                                # cosine to the noisy class sums
            rows = list(st["sums"])
            a = self.w["description_pull"]
            if a > 0 and self.prior is not None and self.sums_release is not None:   # 4.0: the pull
                g = self.sums_release.get("grid")
                g = g if isinstance(g, int) and not isinstance(g, bool) and 1 <= g <= 2**31 else 1
                k = st["projection"].shape[0]
                pull = a * (np.sqrt(2.0 * k) * float(self.sums_release["noise_scale"]) / g)
                m = max(1.0, pull)
                rows = [s / m + (pull / m) * _unit(st["projection"] @ e - st["projection"] @ st["origin"])
                        for s, e in zip(rows, self.prior)]
            logits = np.array([_unit(y) @ _unit(s) for s in rows])
            return _softmax(logits / self.w["centroid_temperature"])
        n = np.maximum(st["counts"], 1.0)                               # clamped counts
        mu = st["sums"].sum(axis=0) / max(float(n.sum()), 1.0)
        means = st["sums"] / n[:, None] - mu
        if self.rule == "gaussian":
            b = self.w["centroid_clip_l1"]
            z = y * min(1.0, b / max(float(np.abs(y).sum()), 1e-300)) - mu
            logits = means @ z - 0.5 * (means ** 2).sum(axis=1)
        else:
            logits = np.array([_unit(y - mu) @ _unit(m) for m in means])
        return _softmax(logits / self.w["centroid_temperature"])

    def _prior(self, x: np.ndarray) -> np.ndarray:
        cos = np.array([_unit(x) @ _unit(e) for e in self.prior])
        return _softmax(cos / self.w["prior_temperature"])


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()
