import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, parseConfig } from '../../broker/config.js';
import {
  AGENT,
  APP,
  BOT,
  TRANSFER,
  configError,
  ctx,
  parseRaw,
  validRaw,
  withValue,
} from './helpers.js';

/** A readFile over an in-memory folder, recording what was read. */
function files(map: Record<string, string>) {
  const read: string[] = [];
  return {
    read,
    readFile: (p: string): string => {
      read.push(p);
      if (Object.hasOwn(map, p)) return map[p] as string;
      throw Object.assign(new Error(`ENOENT ${p}`), { code: 'ENOENT' });
    },
  };
}

/** [secret key as written, prefix, the value the valid config holds] */
const SECRETS: [string, string, string][] = [
  ['tokens.agent', 'tokens.', AGENT],
  ['tokens.transfer', 'tokens.', TRANSFER],
  ['matrix.bot_token', 'matrix.', BOT],
  ['instances.personal.app_password', 'instances.personal.', APP],
];

function get(config: ReturnType<typeof parseRaw>['config'], key: string): string | undefined {
  if (key === 'tokens.agent') return config.tokens.agent;
  if (key === 'tokens.transfer') return config.tokens.transfer;
  if (key === 'matrix.bot_token') return config.matrix?.bot_token;
  return config.instances.get('personal')?.app_password;
}

describe.each(SECRETS)('secret %s', (key, _prefix, value) => {
  it('reads <key>_file relative to the config folder, trimming the trailing newline', () => {
    const raw = withValue(key, undefined);
    withValue(`${key}_file`, 'secrets/s.txt', raw);
    for (const content of [`${value}\n`, `${value}\r\n`, value]) {
      const fs = files({ '/srv/broker/secrets/s.txt': content });
      expect(get(parseRaw(raw, ctx({ readFile: fs.readFile })).config, key)).toBe(value);
      expect(fs.read).toEqual(['/srv/broker/secrets/s.txt']);
    }
  });

  it('reads an absolute <key>_file as written', () => {
    const raw = withValue(key, undefined);
    withValue(`${key}_file`, '/run/secrets/x', raw);
    const fs = files({ '/run/secrets/x': value });
    expect(get(parseRaw(raw, ctx({ readFile: fs.readFile })).config, key)).toBe(value);
  });

  it('reads <key>_env', () => {
    const raw = withValue(key, undefined);
    withValue(`${key}_env`, 'MY_SECRET', raw);
    expect(get(parseRaw(raw, ctx({ env: { MY_SECRET: value } })).config, key)).toBe(value);
  });

  it('refuses a missing file, naming the key, the path and what to set', () => {
    const raw = withValue(key, undefined);
    withValue(`${key}_file`, 'missing.txt', raw);
    const e = configError(raw);
    expect(e.key).toBe(`${key}_file`);
    expect(e.message).toContain(`${key}_file: cannot read /srv/broker/missing.txt (ENOENT)`);
    expect(e.message).toContain(`or set ${key} or ${key}_env instead`);
  });

  it('refuses an unset or empty environment variable, naming it and what to set', () => {
    const raw = withValue(key, undefined);
    withValue(`${key}_env`, 'UNSET_VAR', raw);
    for (const env of [{}, { UNSET_VAR: '' }]) {
      const e = configError(raw, ctx({ env }));
      expect(e.key).toBe(`${key}_env`);
      expect(e.message).toContain('environment variable UNSET_VAR is not set: export UNSET_VAR=');
      expect(e.message).toContain(`or set ${key} or ${key}_file instead`);
    }
  });

  it('refuses two forms at once (which one would win is ambiguous)', () => {
    for (const extra of ['_file', '_env']) {
      const raw = withValue(`${key}${extra}`, extra === '_env' ? 'X' : 'f');
      const e = configError(raw, ctx({ env: { X: value }, readFile: () => value }));
      expect(e.key).toBe(key);
      expect(e.message).toMatch(/more than one way: keep only one of/);
    }
    const all = withValue(`${key}_file`, 'f');
    withValue(`${key}_env`, 'X', all);
    expect(configError(all, ctx({ env: { X: value }, readFile: () => value })).key).toBe(key);
  });

  it('refuses none of the three forms', () => {
    const e = configError(withValue(key, undefined));
    expect(e.key).toBe(key);
    expect(e.message).toContain(`${key}: is required: set ${key}, ${key}_file`);
  });

  it('refuses an empty file', () => {
    const raw = withValue(key, undefined);
    withValue(`${key}_file`, 's', raw);
    const e = configError(raw, ctx({ readFile: () => '\n' }));
    expect(e.message).toContain(`${key}_file: must not be empty (the value from ${key}_file)`);
  });
});

describe('token rules apply to the resolved value', () => {
  it('refuses a short token read from a file, naming the _file key', () => {
    const raw = withValue('tokens.agent', undefined);
    withValue('tokens.agent_file', 'agent.token', raw);
    const e = configError(raw, ctx({ readFile: () => 'short\n' }));
    expect(e.message).toMatch(
      /^tokens\.agent_file: must be at least 32 characters \(the value from tokens\.agent_file\)/,
    );
  });

  it('refuses an agent token from env equal to the inline transfer token', () => {
    const raw = withValue('tokens.agent', undefined);
    withValue('tokens.agent_env', 'A', raw);
    const e = configError(raw, ctx({ env: { A: TRANSFER } }));
    expect(e.key).toBe('tokens.transfer');
  });

  it('refuses a multi-line token file (only a trailing newline is trimmed)', () => {
    const raw = withValue('tokens.agent', undefined);
    withValue('tokens.agent_file', 'agent.token', raw);
    const e = configError(raw, ctx({ readFile: () => `${AGENT}\n${AGENT}\n` }));
    expect(e.message).toMatch(/control characters or line breaks/);
  });
});

describe('attack: a secret leaking through an error message', () => {
  // Secrets as generated by `openssl rand -hex 32` or base64url, with a lower-case letter.
  const secret = fc
    .tuple(
      fc.string({ unit: fc.constantFrom(...'abcdef0123456789'), minLength: 20, maxLength: 63 }),
      fc.string({
        unit: fc.constantFrom(...'ABCDEFGHIJabcdefghij0123456789-_'),
        minLength: 0,
        maxLength: 20,
      }),
    )
    .map(([a, b]) => `k${a}${b}`);

  /** Each takes a secret and returns a broken config text that carries it somewhere. */
  const mistakes: [string, (s: string) => string | Record<string, unknown>][] = [
    ['agent equals transfer', (s) => withValue('tokens.transfer', s, withValue('tokens.agent', s))],
    ['token with a space', (s) => withValue('tokens.agent', `${s} x`)],
    ['token too short', (s) => withValue('tokens.agent', s.slice(0, 31))],
    ['token with a newline', (s) => withValue('tokens.agent', `${s}\nmore`)],
    ['bot token with a space', (s) => withValue('matrix.bot_token', `${s} x`)],
    [
      'password in the instance URL',
      (s) => withValue('instances.personal.url', `https://alice:${s}@c.example`),
    ],
    [
      'password in an http URL',
      (s) => withValue('instances.personal.url', `http://alice:${s}@c.example`),
    ],
    [
      'token in a homeserver query',
      (s) => withValue('matrix.homeserver', `https://m.example/?access_token=${s}`),
    ],
    ['secret as an unknown key', (s) => withValue(`tokens.${s}`, 'x')],
    [
      'secret as an instance name',
      (s) =>
        withValue(`instances.${s}X`, {
          url: 'https://c.example',
          username: 'a',
          app_password: 'Other-AppPassword-0123',
        }),
    ],
    [
      'secret in the _env key',
      (s) => withValue('tokens.agent_env', s, withValue('tokens.agent', undefined)),
    ],
    [
      'secret in the _file key',
      (s) => withValue('tokens.agent_file', s, withValue('tokens.agent', undefined)),
    ],
    ['secret as the duration', (s) => withValue('lifecycle.default_grant', s)],
    ['secret as the log level', (s) => withValue('logging.level', s)],
    ['secret as approval', (s) => withValue('approval', s)],
    ['secret as the bot user', (s) => withValue('matrix.bot_user', s)],
    ['secret as the room', (s) => withValue('matrix.room_id', s)],
    ['secret as the host', (s) => withValue('server.host', `${s}/x`)],
    ['secret as allowed host', (s) => withValue('server.allowed_hosts', [`https://${s}`])],
    ['secret as the port', (s) => withValue('server.port', s)],
    ['secret in a YAML syntax error', (s) => `tokens: { agent: ${s}: x }\n`],
    ['secret after a tab', (s) => `tokens:\n\tagent: ${s}\n`],
    ['secret in a duplicate key', (s) => `tokens:\n  agent: ${s}\n  agent: ${s}\n`],
    ['secret as an unclosed quote', (s) => `tokens:\n  agent: "${s}\n`],
    ['secret in a flow key', (s) => `tokens: {agent:${s}}\n`],
    ['secret as a bare line', (s) => `tokens:\n  ${s}\n`],
    ['secret as the password username', (s) => withValue('instances.personal.username', `${s}/`)],
  ];

  it.each(mistakes)('%s', (_name, make) => {
    fc.assert(
      fc.property(secret, (s) => {
        const input = make(s);
        const text = typeof input === 'string' ? input : stringify(input);
        let message = '';
        try {
          parseConfig(text, ctx({ env: {} }));
        } catch (e) {
          expect(e).toBeInstanceOf(ConfigError);
          message = (e as ConfigError).message;
          for (const issue of (e as ConfigError).issues) {
            expect(issue.key).not.toContain(s.slice(0, 20));
          }
        }
        expect(message).not.toBe('');
        expect(message).not.toContain(s.slice(0, 20));
      }),
      { numRuns: 25 },
    );
  });

  it('never puts a valid secret into a warning', () => {
    const raw = withValue('instances.personal.url', 'http://localhost:8080');
    withValue('server.host', '0.0.0.0', raw);
    const { warnings, config } = parseRaw(raw);
    expect(warnings.length).toBeGreaterThan(0);
    for (const w of warnings)
      for (const s of [AGENT, TRANSFER, BOT, APP]) expect(w).not.toContain(s);
    expect(config.tokens.agent).toBe(AGENT);
  });

  it('a valid config parses with the generated secrets too', () => {
    fc.assert(
      fc.property(secret, (s) => {
        const raw = validRaw();
        raw['tokens'] = { agent: `a${s}`.padEnd(32, 'x'), transfer: `t${s}`.padEnd(32, 'y') };
        expect(parseRaw(raw).config.tokens.agent).toBe(`a${s}`.padEnd(32, 'x'));
      }),
      { numRuns: 20 },
    );
  });
});
