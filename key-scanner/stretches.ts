/** Overlapping evidence in one line, reduced to one finding per stretch of it. */

export interface Candidate {
  readonly start: number;
  readonly end: number;
  readonly value: string;
  readonly kind: string;
  /** Lower is stronger evidence (see Sink in line-search.ts). */
  readonly rank: number;
}

/**
 * One finding per stretch of the line, in order of where they start: a provider's shape over a
 * bearer token or a URL's credential over a value assigned to a name (a key under OPENAI_API_KEY is
 * an OpenAI key, base64-encoded or not). Rank by rank, each rank's candidates are swept in order
 * against the kept ones (disjoint, so sorted by start and by end alike): a line holding thousands
 * of keys is read in time proportional to their number, not its square.
 */
export function oneFindingPerStretch(candidates: Candidate[]): Candidate[] {
  candidates.sort((a, b) => a.rank - b.rank || a.start - b.start);
  let kept: Candidate[] = [];
  for (let from = 0; from < candidates.length;) {
    let to = from;
    while (to < candidates.length && candidates[to].rank === candidates[from].rank) to++;
    const added: Candidate[] = [];
    let k = 0;
    for (let i = from; i < to; i++) {
      const candidate = candidates[i];
      while (k < kept.length && kept[k].end <= candidate.start) k++;
      if (k < kept.length && kept[k].start < candidate.end) continue;
      const last = added[added.length - 1];
      if (last !== undefined && last.end > candidate.start) continue;
      added.push(candidate);
    }
    kept = mergeByStart(kept, added);
    from = to;
  }
  return kept;
}

function mergeByStart(a: Candidate[], b: Candidate[]): Candidate[] {
  if (b.length === 0) return a;
  const merged: Candidate[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i].start <= b[j].start)) merged.push(a[i++]);
    else merged.push(b[j++]);
  }
  return merged;
}
