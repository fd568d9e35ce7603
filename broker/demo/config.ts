/**
 * The demo's configuration: written as an ordinary config.yaml (so the demo goes through
 * the same validation as a real setup, and the owner can read it as an example) that
 * names its secrets by environment variable. The values live only in this process's
 * environment, tokens.env and the terminal, never in the YAML.
 */
import { randomBytes } from 'node:crypto';

export const DEMO_INSTANCE = 'demo';
export const DEMO_HOST = '127.0.0.1';
export const DEMO_PREFERRED_PORT = 8765;

/** Environment variables the demo config reads its secrets from. */
export const DEMO_ENV = {
  agent: 'BROKER_DEMO_AGENT_TOKEN',
  transfer: 'BROKER_DEMO_TRANSFER_TOKEN',
  appPassword: 'BROKER_DEMO_APP_PASSWORD',
} as const;

export interface DemoSecrets {
  agent: string;
  transfer: string;
  appPassword: string;
}

/** A bearer token: 32 random bytes, base64url (43 characters). */
export function randomToken(random: (n: number) => Buffer = randomBytes): string {
  return random(32).toString('base64url');
}

/**
 * Security: fresh tokens on every start, so a token pasted somewhere during an earlier
 * demo stops working when the demo restarts.
 */
export function freshSecrets(random: (n: number) => Buffer = randomBytes): DemoSecrets {
  return {
    agent: randomToken(random),
    transfer: randomToken(random),
    appPassword: randomToken(random),
  };
}

export function secretsEnv(secrets: DemoSecrets): Record<string, string> {
  return {
    [DEMO_ENV.agent]: secrets.agent,
    [DEMO_ENV.transfer]: secrets.transfer,
    [DEMO_ENV.appPassword]: secrets.appPassword,
  };
}

export interface DemoConfigInput {
  /** The fake Nextcloud's base URL (http on loopback). */
  cloudUrl: string;
  cloudUser: string;
  /** 0 = any free port. */
  port: number;
}

/** config.yaml text for the demo; data_dir is the config's own folder. */
export function demoConfigYaml(input: DemoConfigInput): string {
  return [
    '# Written by `broker start` for the demo; rewritten on every demo start.',
    '# Secrets come from environment variables set by the demo process.',
    'server:',
    `  host: ${DEMO_HOST}`,
    `  port: ${input.port}`,
    '  allowed_hosts: [localhost, 127.0.0.1]',
    'tokens:',
    `  agent_env: ${DEMO_ENV.agent}`,
    `  transfer_env: ${DEMO_ENV.transfer}`,
    'approval: console',
    'lifecycle: { pending_timeout: 12h, default_grant: 24h, max_grant: 7d }',
    'data_dir: .',
    'logging: { level: warn }',
    'instances:',
    `  ${DEMO_INSTANCE}:`,
    `    url: ${JSON.stringify(input.cloudUrl)}`,
    `    username: ${JSON.stringify(input.cloudUser)}`,
    `    app_password_env: ${DEMO_ENV.appPassword}`,
    '    discovery: true',
    '',
  ].join('\n');
}
