/**
 * The real Nextcloud 29 the real-server suite runs against, described by the environment
 * (`.ci/run` builds one and exports it; CONTRIBUTING.md says how to do it by hand):
 *
 *   NC_URL, NC_USER, NC_APP_PASSWORD      the owner (alice): the broker's instance account
 *   NC_USER2, NC_APP_PASSWORD2            a second user (bob): "another writer"
 *   NC_RESET                              a shell command that empties both users' homes,
 *                                         trash bins and locks (the kit's `reset.sh --wipe`)
 *   NC_OCC                                a shell command prefix that runs occ on the server
 *   NC_STOP, NC_START                     shell commands that stop the server and start it
 *                                         again (the kit's `stop.sh`, `start.sh`); needed
 *                                         only by the tests that take the server down
 *
 * The server must be disposable: every test file starts by resetting it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { machineEnv } from '../../support/test-tmp.js';

const run = promisify(execFile);

export const REAL_ENV = [
  'NC_URL',
  'NC_USER',
  'NC_APP_PASSWORD',
  'NC_USER2',
  'NC_APP_PASSWORD2',
  'NC_RESET',
  'NC_OCC',
] as const;

export interface Account {
  user: string;
  password: string;
}

export interface RealServer {
  /** Base URL, no trailing slash. */
  url: string;
  owner: Account;
  other: Account;
  /** Empties both homes, trash bins and locks (about a second). */
  reset(): Promise<void>;
  /** Runs `occ` with these arguments; returns its stdout. */
  occ(...args: string[]): Promise<string>;
  /** Stops the server (NC_STOP); throws, naming the variable, when it is not set. */
  stop(): Promise<void>;
  /** Starts it again and waits until it answers (NC_START). */
  start(): Promise<void>;
  /** Runs the due background jobs once, as one cron run does (NC_CRON); throws when unset. */
  cron(): Promise<void>;
  /**
   * Enables or disables an app with occ, then waits until the web server answers so:
   * Nextcloud 34 caches the app list, and its workers keep the old one for a second or two.
   */
  setApp(app: SwitchableApp, enabled: boolean): Promise<void>;
}

/** The apps the suite switches, by the capability that shows each is on. */
const APP_CAPABILITY = { files_lock: 'locking', files_trashbin: 'undelete' } as const;
export type SwitchableApp = keyof typeof APP_CAPABILITY;

/** Whether the server's capabilities show the app on (as the owner sees them). */
async function appShown(url: string, owner: Account, app: SwitchableApp): Promise<boolean> {
  const res = await fetch(`${url}/ocs/v2.php/cloud/capabilities?format=json`, {
    headers: {
      'OCS-APIRequest': 'true',
      Authorization: `Basic ${Buffer.from(`${owner.user}:${owner.password}`).toString('base64')}`,
    },
  });
  const doc = (await res.json()) as {
    ocs?: { data?: { capabilities?: { files?: Record<string, unknown> } } };
  };
  return doc.ocs?.data?.capabilities?.files?.[APP_CAPABILITY[app]] !== undefined;
}

/** The commands that take the server down and up, needed only by the tests that do. */
export const REAL_STOP_START_ENV = ['NC_STOP', 'NC_START'] as const;

function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

async function shell(what: string, command: string): Promise<string> {
  try {
    // The server's commands (a restart, occ, cron) run with the machine's temp folder, not
    // the run's: Nextcloud runs as another user and outlives the run (support/test-tmp.ts).
    const { stdout } = await run('sh', ['-c', command], { timeout: 120_000, env: machineEnv() });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; code?: unknown };
    throw new Error(
      `${what} failed (exit ${String(e.code)}): ${(e.stderr ?? '').trim().slice(-400)}`,
      { cause: error },
    );
  }
}

function stopStart(env: NodeJS.ProcessEnv, name: (typeof REAL_STOP_START_ENV)[number]): string {
  const command = env[name] ?? '';
  if (command === '')
    throw new Error(
      `this test stops and starts the server: it needs ${REAL_STOP_START_ENV.join(' and ')} (see CONTRIBUTING.md, "The real-server suite")`,
    );
  return command;
}

/** The server from the environment; throws naming every missing variable. */
export function realServer(env: NodeJS.ProcessEnv = process.env): RealServer {
  const missing = REAL_ENV.filter((k) => (env[k] ?? '') === '');
  if (missing.length > 0)
    throw new Error(
      `the real-server suite needs ${missing.join(', ')} (see CONTRIBUTING.md, "The real-server suite")`,
    );
  const get = (k: (typeof REAL_ENV)[number]): string => env[k] as string;
  return {
    url: get('NC_URL').replace(/\/+$/, ''),
    owner: { user: get('NC_USER'), password: get('NC_APP_PASSWORD') },
    other: { user: get('NC_USER2'), password: get('NC_APP_PASSWORD2') },
    reset: async () => {
      await shell('NC_RESET', get('NC_RESET'));
    },
    occ: (...args) =>
      shell(`occ ${args.join(' ')}`, `${get('NC_OCC')} ${args.map(shellQuote).join(' ')}`),
    stop: async () => {
      await shell('NC_STOP', stopStart(env, 'NC_STOP'));
    },
    start: async () => {
      await shell('NC_START', stopStart(env, 'NC_START'));
    },
    cron: async () => {
      const command = env['NC_CRON'] ?? '';
      if (command === '')
        throw new Error(
          'this test runs the background jobs: it needs NC_CRON (see CONTRIBUTING.md, "The real-server suite")',
        );
      await shell('NC_CRON', command);
    },
    setApp: async (app, enabled) => {
      await shell(
        `occ app:${enabled ? 'enable' : 'disable'} ${app}`,
        `${get('NC_OCC')} app:${enabled ? 'enable' : 'disable'} ${app}`,
      );
      const url = get('NC_URL').replace(/\/+$/, '');
      const owner = { user: get('NC_USER'), password: get('NC_APP_PASSWORD') };
      // Two answers in a row, half a second apart, so no worker still has the old list.
      let agreeing = 0;
      for (let tries = 0; agreeing < 2; tries++) {
        if (tries >= 40)
          throw new Error(`the server still shows ${app} ${enabled ? 'off' : 'on'} 20 s after occ`);
        agreeing = (await appShown(url, owner, app)) === enabled ? agreeing + 1 : 0;
        await new Promise((r) => setTimeout(r, 500));
      }
    },
  };
}
