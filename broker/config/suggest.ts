/**
 * Edit distance counting a swap of two neighbours as one edit (optimal string
 * alignment), for "did you mean" hints on unknown keys.
 */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => d[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, at(i - 2, j - 2) + 1);
      }
      row[j] = best;
    }
  }
  return at(a.length, b.length);
}

/** The known key closest to `unknown`, when it is plausibly a typo. */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(unknown.toLowerCase(), k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  const limit = Math.max(1, Math.floor(unknown.length / 3));
  return bestDistance <= limit ? best : undefined;
}

interface Def {
  type?: string;
  shape?: Record<string, unknown>;
  innerType?: unknown;
  valueType?: unknown;
  in?: unknown;
}

function defOf(schema: unknown): Def | undefined {
  if (typeof schema !== 'object' || schema === null || !('_zod' in schema)) return undefined;
  const zod = (schema as { _zod: { def?: Def } })._zod;
  return zod.def;
}

/** The keys an object schema accepts at `path` (walks objects, records and wrappers). */
export function knownKeysAt(schema: unknown, path: readonly PropertyKey[]): string[] {
  let def = defOf(schema);
  let i = 0;
  while (def !== undefined) {
    if (def.innerType !== undefined) def = defOf(def.innerType);
    else if (def.type === 'pipe') def = defOf(def.in);
    else if (i === path.length) return def.shape === undefined ? [] : Object.keys(def.shape);
    else if (def.type === 'record') {
      def = defOf(def.valueType);
      i++;
    } else if (def.shape !== undefined) {
      def = defOf(def.shape[String(path[i])]);
      i++;
    } else return [];
  }
  return [];
}
