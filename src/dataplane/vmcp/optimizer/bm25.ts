/**
 * Okapi BM25 over an immutable set of documents, each a bag of weighted terms (a field
 * weight multiplies a term's count, a simple form of BM25F). Everything that does not depend
 * on the query — each term's idf and each posting's length-normalised tf part — is computed
 * once when the index is built, so a search only adds up `query weight × idf × tf part` over
 * the postings of its terms and keeps the best `limit` documents.
 *
 * score(d, q) = Σ_t qw(t) · idf(t) · tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl)),
 * idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))  (the non-negative variant Lucene uses).
 */

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/** One document's analysed text: term → weighted count, and the sum of the counts. */
export interface WeightedTerms {
  terms: ReadonlyMap<string, number>;
  length: number;
}

interface Posting {
  idf: number;
  docs: Int32Array;
  /** tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl)), per entry of `docs`. */
  tfParts: Float64Array;
}

export interface Hit {
  doc: number;
  score: number;
}

export class Bm25Index {
  readonly size: number;
  private readonly postings = new Map<string, Posting>();
  private readonly scores: Float64Array;
  private readonly touched: Int32Array;

  constructor(docs: readonly WeightedTerms[], k1 = BM25_K1, b = BM25_B) {
    const n = docs.length;
    this.size = n;
    this.scores = new Float64Array(n);
    this.touched = new Int32Array(n);
    let total = 0;
    for (const d of docs) total += d.length;
    const avgdl = n === 0 || total === 0 ? 1 : total / n;
    // Pass 1: document frequencies, to size each posting list exactly.
    const df = new Map<string, number>();
    for (const d of docs) for (const term of d.terms.keys()) df.set(term, (df.get(term) ?? 0) + 1);
    const fill = new Map<string, number>();
    for (const [term, count] of df) {
      this.postings.set(term, {
        idf: Math.log(1 + (n - count + 0.5) / (count + 0.5)),
        docs: new Int32Array(count),
        tfParts: new Float64Array(count),
      });
      fill.set(term, 0);
    }
    // Pass 2: postings in document order.
    for (let i = 0; i < n; i++) {
      const d = docs[i]!;
      const norm = k1 * (1 - b + (b * d.length) / avgdl);
      for (const [term, tf] of d.terms) {
        const p = this.postings.get(term)!;
        const at = fill.get(term)!;
        p.docs[at] = i;
        p.tfParts[at] = (tf * (k1 + 1)) / (tf + norm);
        fill.set(term, at + 1);
      }
    }
  }

  /**
   * The best `limit` documents for `query` (term → weight) that `accept` lets through, best
   * first; ties go to the lower document number. Documents scoring 0 are never returned.
   */
  search(query: ReadonlyMap<string, number>, limit: number, accept?: (doc: number) => boolean): Hit[] {
    const scores = this.scores;
    const touched = this.touched;
    let count = 0;
    for (const [term, weight] of query) {
      const p = this.postings.get(term);
      if (p === undefined) continue;
      const w = weight * p.idf;
      const docs = p.docs;
      const parts = p.tfParts;
      for (let j = 0; j < docs.length; j++) {
        const doc = docs[j]!;
        if (scores[doc] === 0) touched[count++] = doc;
        scores[doc]! += w * parts[j]!;
      }
    }
    // Keep the top `limit` in a small array sorted best first (limit ≤ 50).
    const top: Hit[] = [];
    for (let i = 0; i < count; i++) {
      const doc = touched[i]!;
      const score = scores[doc]!;
      scores[doc] = 0;
      if (score <= 0 || limit <= 0) continue;
      if (top.length === limit) {
        const last = top[limit - 1]!;
        if (score < last.score || (score === last.score && doc > last.doc)) continue;
      }
      if (accept !== undefined && !accept(doc)) continue;
      let at = top.length;
      while (at > 0) {
        const prev = top[at - 1]!;
        if (prev.score > score || (prev.score === score && prev.doc < doc)) break;
        at--;
      }
      top.splice(at, 0, { doc, score });
      if (top.length > limit) top.pop();
    }
    return top;
  }
}
