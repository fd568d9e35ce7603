/**
 * The demo's configuration: written as an ordinary config.yaml (so the demo goes through
 * the same validation as a real setup, the owner can read it as an example, and
 * `broker doctor --config data/demo/config.yaml` checks it) that names its secrets by
 * file (`*_file:`). The values live in `secrets/` beside it (folder 0700, files 0600),
 * in tokens.env and on the terminal, never in the YAML.
 */
import { randomBytes } from 'node:crypto';

export const DEMO_INSTANCE = 'demo';
export const DEMO_HOST = '127.0.0.1';
export const DEMO_PREFERRED_PORT = 8765;

/** The folder of the demo's secret files, inside its data folder. */
export const DEMO_SECRETS_FOLDER = 'secrets';

/** The demo's secret files, relative to its data folder (what the config names). */
export const DEMO_SECRET_FILES = {
  agent: `${DEMO_SECRETS_FOLDER}/agent-token`,
  transfer: `${DEMO_SECRETS_FOLDER}/transfer-token`,
  appPassword: `${DEMO_SECRETS_FOLDER}/demo-app-password`,
  metrics: `${DEMO_SECRETS_FOLDER}/metrics-token`,
} as const;

export interface DemoSecrets {
  agent: string;
  transfer: string;
  appPassword: string;
  /** The bearer token of GET /metrics (the demo turns metrics on, to be tried). */
  metrics: string;
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
    metrics: randomToken(random),
  };
}

export interface DemoConfigInput {
  /** The fake Nextcloud's base URL (http on loopback). */
  cloudUrl: string;
  cloudUser: string;
  /** 0 = any free port. */
  port: number;
}

/** config.yaml text for the demo; data_dir and the secret files are its own folder's. */
export function demoConfigYaml(input: DemoConfigInput): string {
  return [
    '# Written by `broker start` for the demo; rewritten on every demo start.',
    `# Secrets are read from the files in ${DEMO_SECRETS_FOLDER}/ (mode 0600), new on every start`,
    '# and removed when the demo stops. Check this setup with:',
    '#   npx broker doctor --config data/demo/config.yaml',
    'server:',
    `  host: ${DEMO_HOST}`,
    `  port: ${input.port}`,
    '  allowed_hosts: [localhost, 127.0.0.1]',
    'tokens:',
    `  agent_file: ${DEMO_SECRET_FILES.agent}`,
    `  transfer_file: ${DEMO_SECRET_FILES.transfer}`,
    `  metrics_file: ${DEMO_SECRET_FILES.metrics}`,
    'approval: console',
    'lifecycle: { pending_timeout: 12h, default_grant: 24h, max_grant: 7d }',
    'data_dir: .',
    'logging: { level: warn }',
    'instances:',
    `  ${DEMO_INSTANCE}:`,
    `    url: ${JSON.stringify(input.cloudUrl)}`,
    `    username: ${JSON.stringify(input.cloudUser)}`,
    `    app_password_file: ${DEMO_SECRET_FILES.appPassword}`,
    '    discovery: true',
    '',
  ].join('\n');
}
