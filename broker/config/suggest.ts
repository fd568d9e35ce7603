import type { z } from 'zod';
import { editDistance } from '../base/edit-distance.js';

/** The known key closest to `unknown`, when it is plausibly a typo. */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(unknown.toLowerCase(), k);
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
  shape?: z.ZodRawShape;
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
