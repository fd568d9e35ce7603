import { chmodSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, configSecrets, loadConfig } from '../../broker/config.js';
import { AGENT, validRaw, withValue } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'broker-config-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string, mode = 0o600): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  chmodSync(file, mode);
  return file;
}

function loadError(path: string, env: NodeJS.ProcessEnv = {}): ConfigError {
  try {
    loadConfig(path, env);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('loads a file, resolving data_dir and _file paths against its folder', () => {
    mkdirSync(join(dir, 'secrets'));
    write('secrets/agent', `${AGENT}\n`);
    const raw = withValue('tokens.agent', undefined);
    withValue('tokens.agent_file', 'secrets/agent', raw);
    const file = write('config.yaml', stringify(raw));
    const { config, warnings } = loadConfig(file, {});
    expect(warnings).toEqual([]);
    expect(config.tokens.agent).toBe(AGENT);
    expect(config.data_dir).toBe(join(dir, 'data'));
  });

  it('refuses a missing file, saying to copy the example', () => {
    const e = loadError(join(dir, 'config.yaml'));
    expect(e.code).toBe('missing');
    expect(e.message).toContain(`cannot read ${join(dir, 'config.yaml')} (ENOENT)`);
    expect(e.message).toContain('copy config.yaml.example to config.yaml');
  });

  it('refuses a folder in place of the file', () => {
    mkdirSync(join(dir, 'config.yaml'));
    const e = loadError(join(dir, 'config.yaml'));
    expect(e.code).toBe('missing');
    expect(e.message).toMatch(/EISDIR/);
  });

  describe('attack: config file readable by other local users', () => {
    it.each([0o644, 0o640, 0o604, 0o660, 0o666])(
      'warns for mode %o, saying to chmod 600',
      (mode) => {
        const file = write('config.yaml', stringify(validRaw()), mode);
        const { warnings } = loadConfig(file, {});
        expect(warnings).toEqual([
          `${file} is readable by other users (mode ${mode.toString(8)}): run chmod 600 ${file}`,
        ]);
      },
    );

    it.each([0o600, 0o400])('does not warn for mode %o', (mode) => {
      const file = write('config.yaml', stringify(validRaw()), mode);
      expect(loadConfig(file, {}).warnings).toEqual([]);
    });
  });

  it('warns when a _file secret is readable by other users', () => {
    write('agent.token', `${AGENT}\n`, 0o644);
    const raw = withValue('tokens.agent', undefined);
    withValue('tokens.agent_file', 'agent.token', raw);
    const file = write('config.yaml', stringify(raw));
    const secretFile = join(dir, 'agent.token');
    expect(loadConfig(file, {}).warnings).toEqual([
      `tokens.agent_file: ${secretFile} is readable by other users (mode 644): run chmod 600 ${secretFile}`,
    ]);
    chmodSync(secretFile, 0o600);
    expect(loadConfig(file, {}).warnings).toEqual([]);
  });

  it('still reports config errors (not the mode) first for a broken, world-readable file', () => {
    const file = write('config.yaml', stringify(withValue('server.port', 'x')), 0o644);
    expect(loadError(file).key).toBe('server.port');
  });
});

describe('config.yaml.example', () => {
  const example = resolve(import.meta.dirname, '../../config.yaml.example');
  const env = {
    BROKER_AGENT_TOKEN: 'a'.repeat(64),
    BROKER_TRANSFER_TOKEN: 'b'.repeat(64),
    BROKER_MATRIX_TOKEN: 'syt_example_token',
    BROKER_MATRIX_CRYPTO_SECRET: 'c'.repeat(64),
    BROKER_MATRIX_PASSWORD: 'the-bot-password-123',
    NEXTCLOUD_PERSONAL_APP_PASSWORD: 'Abcde-Fghij-Klmno-Pqrst-Uvwxy',
  };

  it('parses with its placeholder secrets given through the environment', () => {
    const file = write('config.yaml', readFileSync(example, 'utf8'));
    const { config, warnings } = loadConfig(file, env);
    expect(warnings).toEqual([]);
    expect(config.tokens).toEqual({
      agent: env.BROKER_AGENT_TOKEN,
      transfer: env.BROKER_TRANSFER_TOKEN,
    });
    expect(config.approval).toBe('matrix');
    expect(config.matrix?.bot_token).toBe(env.BROKER_MATRIX_TOKEN);
    expect(config.instances.get('personal')?.app_password).toBe(
      env.NEXTCLOUD_PERSONAL_APP_PASSWORD,
    );
    expect(config.matrix?.encryption).toBe('required');
    // The example pins nothing: the owner pairs the phone with `broker pair`.
    expect(config.matrix?.approver_devices).toEqual([]);
    expect(configSecrets(config)).toHaveLength(6);
    expect(config.data_dir).toBe(join(dir, 'data'));
  });

  it('shows the documented defaults', () => {
    const file = write('config.yaml', readFileSync(example, 'utf8'));
    const fromExample = loadConfig(file, env).config;
    const minimal = write(
      'minimal.yaml',
      stringify({
        tokens: { agent: 'a'.repeat(64), transfer: 'b'.repeat(64) },
        matrix: {
          homeserver: 'https://matrix.example.org',
          bot_user: '@broker:example.org',
          bot_token: 'syt_example_token',
          room_id: '!abcdefghijklmnop:example.org',
          approver: '@you:example.org',
          encryption: 'required',
          crypto_secret: 'c'.repeat(64),
          bot_password: 'the-bot-password-123',
        },
        instances: {
          personal: {
            url: 'https://cloud.example.org',
            username: 'agent-files',
            app_password: 'Abcde-Fghij-Klmno-Pqrst-Uvwxy',
          },
        },
      }),
    );
    expect(loadConfig(minimal, {}).config).toEqual(fromExample);
  });

  it('refuses to start when the environment variables are not set, naming the first', () => {
    const file = write('config.yaml', readFileSync(example, 'utf8'));
    const e = loadError(file, {});
    expect(e.key).toBe('tokens.agent_env');
    expect(e.message).toContain('BROKER_AGENT_TOKEN is not set');
    expect(e.issues.map((i) => i.key)).toEqual([
      'tokens.agent_env',
      'tokens.transfer_env',
      'matrix.bot_token_env',
      'matrix.bot_password_env',
      'matrix.crypto_secret_env',
      'instances.personal.app_password_env',
    ]);
  });

  it('documents every key the schema knows', () => {
    const text = readFileSync(example, 'utf8');
    for (const key of [
      'host',
      'port',
      'allowed_hosts',
      'max_body_bytes',
      'request_timeout_ms',
      'agent',
      'transfer',
      'approval',
      'homeserver',
      'bot_user',
      'bot_token',
      'room_id',
      'approver',
      'pending_timeout',
      'default_grant',
      'max_grant',
      'max_pending',
      'data_dir',
      'level',
      'url',
      'username',
      'app_password',
      'discovery',
      '_file',
      '_env',
      'openssl rand -hex 32',
      'Settings → Security',
    ]) {
      expect(text).toContain(key);
    }
  });
});
