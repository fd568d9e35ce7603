/**
 * config.yaml → BrokerConfig. YAML syntax, then the zod schema, then secrets and
 * cross-key rules; each stage throws a ConfigError naming every offending key.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ConfigError, keyPath, type ConfigIssue } from './errors.js';
import { resolveConfig } from './resolve.js';
import { showKey } from './redact.js';
import { RawConfigSchema } from './schema.js';
import { closestKey, knownKeysAt } from './suggest.js';
import type { BrokerConfig, ConfigContext, ParsedConfig } from './types.js';
import type { JsonObject } from '../base/protocol.js';

const YAML_HINTS = new Map<string, string>([
  ['DUPLICATE_KEY', 'a key appears twice in the same section; keep one'],
  ['MULTIPLE_DOCS', 'the file holds more than one YAML document; keep one'],
  ['BAD_INDENT', 'check the indentation and brackets'],
  ['TAB_AS_INDENT', 'indent with spaces, not tabs'],
]);

/**
 * Security: the YAML library's messages quote the offending source line, which may hold
 * a secret; only the error code and position are reported.
 */
function parseYaml(yamlText: string): unknown {
  const doc = parseDocument(yamlText, { prettyErrors: true, uniqueKeys: true });
  const issues: ConfigIssue[] = doc.errors.map((e) => {
    const at = e.linePos?.[0];
    const where = at === undefined ? '' : ` at line ${at.line}, column ${at.col}`;
    const hint = YAML_HINTS.get(e.code) ?? 'fix the YAML syntax there';
    return { key: '(yaml)', message: `YAML syntax error ${e.code}${where}: ${hint}` };
  });
  const [first, ...rest] = issues;
  if (first !== undefined) throw new ConfigError('syntax', [first, ...rest]);
  return doc.toJS({ maxAliasCount: 50 });
}

function unknownKeyIssues(path: readonly PropertyKey[], keys: readonly string[]): ConfigIssue[] {
  const known = knownKeysAt(RawConfigSchema, path);
  return keys.map((k) => {
    const hint = closestKey(k, known);
    return {
      key: keyPath([...path, showKey(k)]),
      message:
        hint === undefined
          ? `unknown key (known keys here: ${known.join(', ')}); remove it`
          : `unknown key (did you mean ${hint}?)`,
    };
  });
}

function zodIssues(error: z.ZodError): ConfigIssue[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') return unknownKeyIssues(issue.path, issue.keys);
    if (issue.code === 'invalid_key') {
      const bad = String(issue.path[issue.path.length - 1]);
      return [{ key: keyPath([...issue.path.slice(0, -1), showKey(bad)]), message: issue.message }];
    }
    const key = keyPath(issue.path);
    // Security: `input` is only inspected for "missing", never printed.
    const missing = issue.code === 'invalid_type' && 'input' in issue && issue.input === undefined;
    const required = missing && !issue.message.startsWith('is required');
    return { key, message: required ? `is required: ${issue.message}` : issue.message };
  });
}

function throwIfAny(issues: ConfigIssue[]): void {
  const [first, ...rest] = issues;
  if (first !== undefined) throw new ConfigError('invalid', [first, ...rest]);
}

export function parseConfig(yamlText: string, ctx: ConfigContext): ParsedConfig {
  const data = parseYaml(yamlText);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw ConfigError.single(
      'invalid',
      '(top level)',
      'the file must be a YAML mapping of sections (server:, tokens:, instances: …); start from config.yaml.example',
    );
  }
  // Security: `__proto__` cannot round-trip through plain objects; a section or instance
  // of that name would otherwise vanish without a word.
  const instances: unknown = (data as JsonObject)['instances'];
  const protoKeys: ConfigIssue[] = [];
  if (Object.hasOwn(data, '__proto__')) {
    protoKeys.push({ key: '__proto__', message: 'unknown key; remove it' });
  }
  if (
    typeof instances === 'object' &&
    instances !== null &&
    Object.hasOwn(instances, '__proto__')
  ) {
    protoKeys.push({
      key: 'instances.__proto__',
      message: 'is a reserved name; rename the instance',
    });
  }
  const parsed = RawConfigSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) throwIfAny([...protoKeys, ...zodIssues(parsed.error)]);
  throwIfAny(protoKeys);
  if (!parsed.success) throw new Error('unreachable: issues were thrown above');

  const { config, issues, warnings } = resolveConfig(parsed.data, ctx);
  throwIfAny(issues);
  return { config, warnings };
}

export function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): ParsedConfig {
  const file = resolvePath(path);
  let text: string;
  let mode: number;
  try {
    mode = statSync(file).mode;
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = typeof e === 'object' && e !== null && 'code' in e ? String(e.code) : 'unreadable';
    const fix =
      code === 'ENOENT'
        ? 'copy config.yaml.example to config.yaml and fill it in'
        : 'check the path and its permissions';
    throw ConfigError.single('missing', '(file)', `cannot read ${file} (${code}): ${fix}`);
  }
  const result = parseConfig(text, {
    baseDir: dirname(file),
    env,
    readFile: (p) => readFileSync(p, 'utf8'),
    fileMode: (p) => statSync(p).mode,
  });
  // Security: the file holds (or points at) every secret; others must not read it.
  if ((mode & 0o077) !== 0) {
    result.warnings.push(
      `${file} is readable by other users (mode ${(mode & 0o777).toString(8).padStart(3, '0')}): run chmod 600 ${file}`,
    );
  }
  return result;
}

/** Every secret value in the config, for the log/audit scrubber. */
export function configSecrets(config: BrokerConfig): string[] {
  const secrets = [config.tokens.agent, config.tokens.transfer];
  if (config.tokens.metrics !== undefined) secrets.push(config.tokens.metrics);
  if (config.matrix !== undefined) {
    const { bot_token, crypto_secret, bot_password } = config.matrix;
    secrets.push(bot_token, crypto_secret ?? '', bot_password ?? '');
  }
  for (const inst of config.instances.values()) secrets.push(inst.app_password);
  return secrets.filter((s) => s !== '');
}
