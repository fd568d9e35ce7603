import { describe, expect, it } from 'vitest';
import { configSecrets } from '../../broker/config.js';
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

describe('parseConfig: a valid file', () => {
  it('fills every default (docs/contracts.md §7)', () => {
    const { config, warnings } = parseRaw(validRaw());
    expect(warnings).toEqual([]);
    expect(config.server).toEqual({
      host: '127.0.0.1',
      port: 8765,
      allowed_hosts: ['localhost', '127.0.0.1', '[::1]'],
      max_body_bytes: 1024 * 1024,
      request_timeout_ms: 30_000,
    });
    expect(config.approval).toBe('matrix');
    expect(config.lifecycle).toEqual({
      pending_timeout: 12 * 3_600_000,
      default_grant: 24 * 3_600_000,
      max_grant: 7 * 86_400_000,
      max_pending: 10,
    });
    expect(config.audit).toEqual({ anchor_interval: 3_600_000 });
    expect(config.reconcile).toEqual({ interval: 600_000 });
    expect(config.transfer).toEqual({});
    expect(config.data_dir).toBe('/srv/broker/data');
    expect(config.logging).toEqual({ level: 'info' });
    expect(config.tokens).toEqual({ agent: AGENT, transfer: TRANSFER });
    expect(config.matrix).toEqual({
      homeserver: 'https://matrix.example.org',
      bot_user: '@broker:example.org',
      bot_token: BOT,
      room_id: '!room:example.org',
      approver: '@owner:example.org',
      encryption: 'off',
      approver_devices: [],
      bot_password: undefined,
    });
    expect([...config.instances.entries()]).toEqual([
      [
        'personal',
        {
          name: 'personal',
          url: 'https://cloud.example.org',
          username: 'alice',
          app_password: APP,
          discovery: false,
        },
      ],
    ]);
  });

  it('takes every explicit value over its default', () => {
    const raw = validRaw();
    raw['server'] = {
      host: '::1',
      port: 0,
      allowed_hosts: ['broker.local:8765'],
      max_body_bytes: 4096,
      request_timeout_ms: 500,
    };
    raw['approval'] = 'console';
    raw['lifecycle'] = {
      pending_timeout: '30m',
      default_grant: '2h',
      max_grant: '2h',
      max_pending: 3,
    };
    raw['audit'] = { anchor_interval: '15m' };
    raw['reconcile'] = { interval: 'off' };
    raw['transfer'] = { chunk_size: '32MiB', put_limit: '100MiB' };
    raw['data_dir'] = '/var/lib/broker';
    raw['logging'] = { level: 'debug' };
    const { config } = parseRaw(
      withValue(
        'instances.work',
        {
          url: 'https://work.example.org/nc',
          username: 'a.smith@example.org',
          app_password: 'other-app-password',
          discovery: true,
        },
        raw,
      ),
    );
    expect(config.server).toEqual(raw['server']);
    expect(config.approval).toBe('console');
    expect(config.lifecycle).toEqual({
      pending_timeout: 1_800_000,
      default_grant: 7_200_000,
      max_grant: 7_200_000,
      max_pending: 3,
    });
    expect(config.audit).toEqual({ anchor_interval: 900_000 });
    expect(config.reconcile).toEqual({ interval: 'off' });
    expect(config.transfer).toEqual({ chunk_size: 32 * 2 ** 20, put_limit: 100 * 2 ** 20 });
    expect(config.data_dir).toBe('/var/lib/broker');
    expect(config.logging.level).toBe('debug');
    expect(config.instances.get('work')?.discovery).toBe(true);
    expect(config.instances.size).toBe(2);
  });

  it('writes an IPv6 listen address without brackets, as the socket API wants', () => {
    expect(parseRaw(withValue('server.host', '[::1]')).config.server.host).toBe('::1');
  });

  it('resolves a relative data_dir against the config folder', () => {
    expect(parseRaw(withValue('data_dir', '../state')).config.data_dir).toBe('/srv/state');
  });

  it('accepts console approval without a matrix section', () => {
    const raw = withValue('matrix', undefined);
    raw['approval'] = 'console';
    expect(parseRaw(raw).config.matrix).toBeUndefined();
  });

  it('accepts room version 12 room ids (no server part)', () => {
    const id = `!${'A'.repeat(20)}_-${'b'.repeat(21)}`;
    expect(parseRaw(withValue('matrix.room_id', id)).config.matrix?.room_id).toBe(id);
  });

  it('configSecrets returns every secret', () => {
    const raw = withValue('instances.work', {
      url: 'https://w.example.org',
      username: 'bob',
      app_password: 'second-app-password',
    });
    expect(configSecrets(parseRaw(raw).config).sort()).toEqual(
      [AGENT, TRANSFER, BOT, APP, 'second-app-password'].sort(),
    );
    const consoleRaw = withValue('matrix', undefined);
    consoleRaw['approval'] = 'console';
    expect(configSecrets(parseRaw(consoleRaw).config).sort()).toEqual(
      [AGENT, TRANSFER, APP].sort(),
    );
  });
});

describe('warnings', () => {
  it('warns for plain http on loopback, naming the key', () => {
    const raw = withValue('matrix.homeserver', 'http://localhost:8008');
    withValue('instances.personal.url', 'http://127.0.0.1:8080', raw);
    const { warnings } = parseRaw(raw);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^matrix\.homeserver uses plain http/);
    expect(warnings[1]).toMatch(/^instances\.personal\.url uses plain http/);
  });

  it('warns when listening beyond loopback', () => {
    const { warnings } = parseRaw(withValue('server.host', '0.0.0.0'));
    expect(warnings).toEqual([
      expect.stringMatching(/^server\.host 0\.0\.0\.0 accepts connections/),
    ]);
  });

  it.each(['127.0.0.1', 'localhost', '::1', '[::1]', '127.0.0.2'])(
    'does not warn when listening on %s',
    (host) => {
      expect(parseRaw(withValue('server.host', host)).warnings).toEqual([]);
    },
  );
});

describe('attack: a misspelt option silently falling back to its default', () => {
  it.each([
    ['server.alowed_hosts', ['x'], 'server.alowed_hosts', 'allowed_hosts'],
    ['server.prot', 8000, 'server.prot', 'port'],
    ['tokens.agnet', 'x', 'tokens.agnet', 'agent'],
    ['matrix.aprover', '@x:y', 'matrix.aprover', 'approver'],
    ['lifecycle.max_grnat', '1d', 'lifecycle.max_grnat', 'max_grant'],
    ['lifecycle.pending', '1d', 'lifecycle.pending', undefined],
    ['logging.levle', 'debug', 'logging.levle', 'level'],
    ['instances.personal.discvery', true, 'instances.personal.discvery', 'discovery'],
    ['instances.personal.password', 'pw', 'instances.personal.password', undefined],
    ['datadir', './d', 'datadir', 'data_dir'],
    ['aproval', 'console', 'aproval', 'approval'],
    ['extra', 1, 'extra', undefined],
  ])('refuses %s, naming it', (path, value, key, hint) => {
    const e = configError(withValue(path, value));
    expect(e.code).toBe('invalid');
    expect(e.key).toBe(key);
    expect(e.message).toContain(`${key}: unknown key`);
    if (hint !== undefined) expect(e.message).toContain(`did you mean ${hint}?`);
    else expect(e.message).toMatch(/known keys here: .+; remove it/);
  });

  it('refuses a __proto__ key at the top level and as an instance name', () => {
    const top = configError(
      `__proto__: { approval: console }\n${Object.entries(validRaw())
        .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
        .join('\n')}\n`,
    );
    expect(top.message).toContain('__proto__: unknown key');
    const inst = configError(
      `tokens: ${JSON.stringify(validRaw()['tokens'])}\napproval: console\ninstances:\n  __proto__: { url: "https://x.example", username: a, app_password: Proto-AppPassword-0123 }\n`,
    );
    expect(inst.message).toContain('instances.__proto__: is a reserved name');
  });

  it('reports every problem at once', () => {
    const raw = withValue('server.port', 'x');
    withValue('logging.level', 'loud', raw);
    const e = configError(raw);
    expect(e.issues.map((i) => i.key)).toEqual(['server.port', 'logging.level']);
  });
});

/** [key, bad value, message pattern]; `undefined` removes the key. */
const NEGATIVE: [string, unknown, RegExp][] = [
  ['server', 'all', /mapping/],
  ['server.host', '', /empty/],
  ['server.host', 'http://127.0.0.1', /IP address or host name/],
  ['server.host', 8765, /text/],
  ['server.port', '8765', /port number/],
  ['server.port', -1, /0-65535/],
  ['server.port', 65536, /0-65535/],
  ['server.port', 80.5, /whole number/],
  ['server.allowed_hosts', [], /at least one/],
  ['server.allowed_hosts', 'localhost', /list/],
  ['server.allowed_hosts', ['https://localhost'], /no scheme/],
  ['server.allowed_hosts', [''], /empty/],
  ['server.max_body_bytes', 0, /positive/],
  ['server.max_body_bytes', '1MB', /number of bytes/],
  ['server.max_body_bytes', 1.5, /whole/],
  ['server.request_timeout_ms', 0, /positive/],
  ['server.request_timeout_ms', '30s', /milliseconds/],
  ['tokens', undefined, /is required/],
  ['tokens', 'secret', /mapping/],
  [
    'tokens.agent',
    undefined,
    /is required: set tokens\.agent, tokens\.agent_file .* or tokens\.agent_env/,
  ],
  ['tokens.agent', 'a'.repeat(31), /at least 32 characters.*openssl rand -hex 32/],
  ['tokens.agent', 1234567890, /quote it/],
  ['tokens.agent', `${'a'.repeat(20)} ${'b'.repeat(20)}`, /printable ASCII without spaces/],
  ['tokens.agent', `${'a'.repeat(32)}é`, /printable ASCII/],
  ['tokens.agent', '', /empty/],
  ['tokens.transfer', 'b'.repeat(31), /at least 32/],
  ['tokens.transfer', AGENT, /must differ from tokens\.agent/],
  ['tokens.agent_env', 'NOT-A-NAME', /environment variable name/],
  ['tokens.agent_file', '', /empty/],
  ['approval', 'email', /matrix or console/],
  ['approval', true, /matrix or console/],
  ['matrix', undefined, /is required when approval is matrix.*approval: console/],
  ['matrix', [], /mapping/],
  ['matrix.homeserver', undefined, /is required/],
  ['matrix.homeserver', 'http://matrix.example.org', /https/],
  ['matrix.homeserver', 'https://bot:pw@matrix.example.org', /user name or password/],
  ['matrix.homeserver', 'https://matrix.example.org/?a=b', /query/],
  ['matrix.homeserver', 'https://matrix.example.org/#x', /fragment/],
  ['matrix.homeserver', 'matrix.example.org', /full URL/],
  ['matrix.bot_user', 'broker', /Matrix user ID/],
  ['matrix.bot_user', '@broker', /Matrix user ID/],
  ['matrix.bot_user', 'broker:example.org', /Matrix user ID/],
  ['matrix.bot_user', '@bro ker:example.org', /Matrix user ID/],
  ['matrix.bot_user', '@Broker:example.org', /Matrix user ID/],
  ['matrix.bot_user', '@broker:exa mple.org', /Matrix user ID/],
  ['matrix.bot_user', undefined, /is required/],
  ['matrix.bot_token', undefined, /is required: set matrix\.bot_token/],
  ['matrix.bot_token', 'syt with space', /without spaces/],
  ['matrix.room_id', '#room:example.org', /room ID/],
  ['matrix.room_id', 'room', /room ID/],
  ['matrix.room_id', '!room', /room ID/],
  ['matrix.room_id', '!ro om:example.org', /room ID/],
  ['matrix.approver', '@broker:example.org', /different Matrix user from matrix\.bot_user/],
  ['matrix.approver', '@BROKER:EXAMPLE.ORG', /Matrix user ID/],
  ['matrix.approver', 'owner', /Matrix user ID/],
  ['matrix.approver', ['@a:b'], /Matrix user ID/],
  ['lifecycle', 'long', /mapping/],
  ['lifecycle.pending_timeout', '0h', /duration/],
  ['lifecycle.pending_timeout', 12, /duration like 12h/],
  ['lifecycle.pending_timeout', '12', /duration/],
  ['lifecycle.default_grant', '1.5h', /duration/],
  ['lifecycle.default_grant', '1w', /duration/],
  [
    'lifecycle.default_grant',
    '8d',
    /lifecycle\.max_grant: must be at least lifecycle\.default_grant \(7d < 8d\)/,
  ],
  ['lifecycle.max_grant', '12h', /must be at least lifecycle\.default_grant \(12h < 1d\)/],
  ['lifecycle.max_grant', '-7d', /duration/],
  ['lifecycle.max_pending', 0, /at least 1/],
  ['lifecycle.max_pending', -5, /at least 1/],
  ['lifecycle.max_pending', 2.5, /whole number of requests/],
  ['lifecycle.max_pending', '10', /whole number of requests/],
  ['lifecycle.max_pending', 1001, /at most 1000/],
  ['audit', 'hourly', /mapping/],
  ['audit.anchor_interval', '0h', /duration/],
  ['audit.anchor_interval', 60, /duration like 1h/],
  ['audit.anchor_interval', '30s', /between 1m and 7d \(got 30s\)/],
  ['audit.anchor_interval', '8d', /between 1m and 7d \(got 8d\)/],
  ['audit.anchor_interval', '30d', /between 1m and 7d/],
  ['audit.anchor_intervall', '1h', /unknown key/],
  ['reconcile', 'often', /mapping/],
  ['reconcile.interval', 'sometimes', /duration like 10m .*, or off/],
  ['reconcile.interval', 'Off', /duration like 10m .*, or off/],
  ['reconcile.interval', 600, /duration like 10m .*, or off/],
  ['reconcile.interval', '30s', /must be off, or between 1m and 7d \(got 30s\)/],
  ['reconcile.interval', '8d', /must be off, or between 1m and 7d \(got 8d\)/],
  ['reconcile.intervals', '10m', /unknown key/],
  ['transfer.chunk_size', '1MiB', /between 5MiB and 4GiB/],
  ['transfer.chunk_size', '5GiB', /between 5MiB and 4GiB/],
  ['transfer.chunk_size', '16MB', /size: a whole number followed by KiB, MiB or GiB/],
  ['transfer.chunk_size', '1.5MiB', /size/],
  ['transfer.put_limit', '100MB', /size: a whole number followed by KiB, MiB or GiB/],
  ['transfer.chunk_size', true, /size like 16MiB/],
  ['data_dir', '', /empty/],
  ['data_dir', 5, /text/],
  ['logging.level', 'verbose', /debug, info, warn, error/],
  ['logging.level', 'INFO', /debug, info, warn, error/],
  ['logging', 'info', /mapping/],
  ['instances', undefined, /is required/],
  ['instances', {}, /at least one/],
  ['instances', ['personal'], /mapping of instance name/],
  ['instances.personal', 'https://cloud.example.org', /mapping/],
  ['instances.personal.url', undefined, /is required/],
  ['instances.personal.url', 'http://cloud.example.org', /https/],
  ['instances.personal.url', 'https://alice:pw@cloud.example.org', /user name or password/],
  ['instances.personal.url', 'https://cloud.example.org/?x', /query/],
  ['instances.personal.url', 'https://cloud.example.org/#x', /fragment/],
  ['instances.personal.url', 'ftp://cloud.example.org', /https/],
  ['instances.personal.username', '', /empty/],
  ['instances.personal.username', 'a/b', /without slashes/],
  ['instances.personal.username', 'a\nb', /control characters/],
  ['instances.personal.username', undefined, /is required/],
  ['instances.personal.retention', 'disabled', /mapping/],
  [
    'instances.personal.retention',
    { trashbin_retention_obligation: '30, 60' },
    /versions_retention_obligation.*is required/,
  ],
  [
    'instances.personal.retention.trashbin_retention_obligation',
    '30 days',
    /a value Nextcloud takes for trashbin_retention_obligation: auto, disabled, D/,
  ],
  ['instances.personal.retention.versions_retention_obligation', 30, /text of/],
  ['instances.personal.retention.trashbin_retention', '30, 60', /unknown key/],
  [
    'instances.personal.app_password',
    undefined,
    /is required: set instances\.personal\.app_password/,
  ],
  ['instances.personal.app_password', '', /empty/],
  ['instances.personal.app_password', 'pw\nsecond line', /control characters/],
  ['instances.personal.discovery', 'yes', /true or false/],
  ['instances.personal.discovery', 1, /true or false/],
];

describe('every option has a negative test: a bad value fails loudly, naming the key', () => {
  it.each(NEGATIVE)('%s = %j', (key, value, why) => {
    const e = configError(withValue(key, value));
    const issue = e.issues.find((i) => `${i.key}: ${i.message}`.match(why));
    expect(issue, e.message).toBeDefined();
    expect(e.message).toMatch(why);
    // The named key is the option itself or, for cross-key rules, its partner.
    expect(
      e.key.startsWith(key) || key.startsWith(e.key) || e.key.startsWith(key.split('.')[0] ?? key),
    ).toBe(true);
  });

  it.each([['Personal'], ['my.cloud'], ['a'.repeat(33)], [''], ['with space']])(
    'refuses instance name %j',
    (name) => {
      const raw = validRaw();
      raw['instances'] = {
        [name]: { url: 'https://cloud.example.org', username: 'alice', app_password: APP },
      };
      const e = configError(raw);
      expect(e.message).toMatch(
        /^instances\..*: is not a valid instance name: use 1-32 of a-z, 0-9, _ and -/,
      );
    },
  );

  it('accepts a 32-character instance name', () => {
    const raw = validRaw();
    raw['instances'] = {
      ['a-b_c'.padEnd(32, '9')]: { url: 'https://c.example', username: 'alice', app_password: APP },
    };
    expect(parseRaw(raw).config.instances.has('a-b_c'.padEnd(32, '9'))).toBe(true);
  });
});

describe('YAML problems', () => {
  it.each([
    ['', /YAML mapping/],
    ['- a\n- b\n', /YAML mapping/],
    ['just text', /YAML mapping/],
    ['approval: matrix\napproval: console\n', /DUPLICATE_KEY at line 2/],
    ['a: 1\n---\nb: 2\n', /YAML syntax error/],
    ['tokens: { agent: x\n', /YAML syntax error/],
  ])('refuses %j', (text, why) => {
    const e = configError(text, ctx());
    expect(e.message).toMatch(why);
  });

  it('a duplicate key is refused, not resolved by "last one wins"', () => {
    const e = configError('tokens:\n  agent: one\n  agent: two\n');
    expect(e.code).toBe('syntax');
    expect(e.key).toBe('(yaml)');
  });
});
