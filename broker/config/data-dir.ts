/**
 * Only `data_dir` from a config file, for the owner's commands (`broker approve`, …):
 * they need the folder the running broker keeps its owner socket in, not the secrets,
 * which the owner's second shell may not have in its environment.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { parseDocument } from 'yaml';
import { ConfigError } from './errors.js';

/** The default of `data_dir` (schema.ts). */
const DEFAULT_DATA_DIR = './data';

/** `data_dir` of the config file at `path`, resolved against the file's folder. */
export function dataDirOf(path: string): string {
  const file = resolvePath(path);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = typeof e === 'object' && e !== null && 'code' in e ? String(e.code) : 'unreadable';
    throw ConfigError.single(
      'missing',
      '(file)',
      `cannot read ${file} (${code}): pass the broker's configuration with --config FILE`,
    );
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  // Security: the YAML library's messages quote source lines, which may hold secrets.
  if (doc.errors.length > 0) {
    throw ConfigError.single(
      'syntax',
      '(yaml)',
      `${file} is not valid YAML: run \`broker doctor\``,
    );
  }
  const raw: unknown = doc.get('data_dir');
  if (raw !== undefined && typeof raw !== 'string') {
    throw ConfigError.single('invalid', 'data_dir', 'must be a folder name');
  }
  return resolvePath(dirname(file), raw ?? DEFAULT_DATA_DIR);
}
