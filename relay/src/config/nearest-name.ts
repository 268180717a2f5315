/**
 * The known name a mistyped one was most likely meant to be, for a "did you mean …?" hint:
 * the nearest by edit distance (insertions, deletions, substitutions and swaps of two
 * neighbouring characters each count one), when it is near enough to be a slip of the keys
 * rather than another name.
 */

/** Optimal string alignment distance: Levenshtein plus the swap of two adjacent characters. */
export function editDistance(a: string, b: string): number {
  // rows i-2, i-1 and i of the dynamic programme
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (before[j - 2] as number) + 1);
      current.push(d);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * The candidate nearest to `name` (compared without `prefix`, which they all share, and
 * without regard to case), or undefined when none is within a quarter of the name's
 * length (at least 1, at most 3 edits).
 */
export function nearestName<T extends string>(name: string, candidates: readonly T[], prefix = ''): T | undefined {
  const strip = (s: string) => {
    const upper = s.toUpperCase();
    return upper.startsWith(prefix.toUpperCase()) ? upper.slice(prefix.length) : upper;
  };
  const wanted = strip(name);
  const allowed = Math.max(1, Math.min(3, Math.floor(wanted.length / 4)));
  let best: { name: T; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, strip(candidate));
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}
