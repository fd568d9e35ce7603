/**
 * The key paths of config.yaml as the zod schema defines them (broker/config/schema.ts),
 * walked from the schema itself so the docs tests compare against the code, not a list:
 * `instances.<name>.url`; a secret's `_file`/`_env` forms fold into its key.
 */
import type { z } from 'zod';
import { RawConfigSchema } from '../../broker/config/schema.js';

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Every key path, sections included (`server`, `server.host`, …). */
export function schemaKeys(schema: z.ZodType = RawConfigSchema): Set<string> {
  const keys = new Set<string>();
  const walk = (s: z.ZodType, path: string[]): void => {
    const def = defOf(s);
    if (def.innerType !== undefined) return walk(def.innerType, path);
    if (def.type === 'pipe' && def.in !== undefined) return walk(def.in, path);
    if (def.type === 'record' && def.valueType !== undefined) {
      keys.add([...path, '<name>'].join('.'));
      return walk(def.valueType, [...path, '<name>']);
    }
    if (def.type !== 'object' || def.shape === undefined) return;
    for (const [key, child] of Object.entries(def.shape)) {
      const full = [...path, key];
      keys.add(full.join('.'));
      walk(child, full);
    }
  };
  walk(schema, []);
  // A secret `k` is also `k_file` and `k_env`: one key to document.
  for (const key of [...keys]) {
    const base = key.replace(/_(?:file|env)$/, '');
    if (base !== key && keys.has(base)) keys.delete(key);
  }
  return keys;
}

/** The keys nothing nests under (the settings themselves). */
export function leafKeys(keys: ReadonlySet<string>): string[] {
  return [...keys].filter((k) => ![...keys].some((other) => other.startsWith(`${k}.`)));
}
