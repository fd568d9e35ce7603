/**
 * The demo (`broker start` without a config): a fake Nextcloud serving ./data/demo-cloud
 * (its trash bin in ./data/demo-cloud-trash, kept across restarts), the broker on
 * 127.0.0.1 with fresh tokens and its state in ./data/demo, and the approval console on
 * this terminal. Everything stays on loopback.
 *
 * One demo per folder: a start first checks, without touching anything, that no demo
 * or broker holds ./data/demo (demo-lock.ts), so a second `npm start` is refused before
 * it could rewrite the running demo's config.yaml or secrets.
 *
 * The fake Nextcloud is injected (it lives in fakes/, which the CLI imports), so
 * the broker's own modules never depend on test code.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { startBroker, type RunningBroker } from '../main.js';
import { renderBanner, tokensEnvFile } from './banner.js';
import {
  DEMO_HOST,
  DEMO_PREFERRED_PORT,
  DEMO_SECRET_FILES,
  DEMO_SECRETS_FOLDER,
  demoConfigYaml,
  freshSecrets,
  type DemoSecrets,
} from './config.js';
import { holdDemoLock } from './demo-lock.js';
import { demoLogSink } from './log-sink.js';
import { choosePort } from './ports.js';
import { seedDemoCloud, seedDemoGroupware, type GroupwareSeedTarget } from './seed.js';

export const DEMO_CLOUD_FOLDER = join('data', 'demo-cloud');
export const DEMO_TRASH_FOLDER = join('data', 'demo-cloud-trash');
export const DEMO_DATA_FOLDER = join('data', 'demo');
export const DEMO_CLOUD_USER = 'demo';
export const TOKENS_FILE = 'tokens.env';
export const DEMO_CONFIG_FILE = 'config.yaml';

/** The demo's Nextcloud (the fake one in practice). */
export interface DemoCloud extends Partial<GroupwareSeedTarget> {
  url: string;
  close(): Promise<void>;
}

export type StartCloud = (opts: {
  root: string;
  /** Where its trash bin lives; kept, so trashed files can be restored after a restart. */
  trashDir: string;
  user: string;
  password: string;
  host: string;
}) => Promise<DemoCloud>;

export interface DemoDeps {
  /** Folder the demo keeps its files under (./data/…). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The approval console's input. */
  stdin: Readable;
  /** The banner and the approval console. */
  stdout: Writable;
  /** Human log lines (stderr). */
  stderr: (text: string) => void;
  startCloud: StartCloud;
  random?: (n: number) => Buffer;
  /** Tried first; default 8765. */
  preferredPort?: number;
  /** The clock the seeded events are placed by; default Date.now. */
  now?: () => number;
  /** stdin and stdout are a terminal (default: false, headless with the owner socket). */
  interactive?: boolean;
  /** The owner typed `quit` or Ctrl-D: stop the demo. */
  onQuit?: (why: string) => void;
}

export interface RunningDemo {
  brokerUrl: string;
  mcpUrl: string;
  agentToken: string;
  transferToken: string;
  tokensFile: string;
  broker: RunningBroker;
  /** Stops the broker (audit flushed), then the fake Nextcloud; removes tokens.env. */
  stop(): Promise<void>;
}

function shown(cwd: string, path: string): string {
  const rel = relative(cwd, path);
  return rel.startsWith('..') ? path : `.${sep}${rel}`;
}

/** Creates `file` anew with mode 0600 (an old file's looser mode is not inherited). */
async function writePrivate(file: string, text: string): Promise<void> {
  await rm(file, { force: true });
  await writeFile(file, text, { flag: 'wx', mode: 0o600 });
}

/** The secret files the demo config names (folder 0700, files 0600). */
async function writeSecrets(dataDir: string, secrets: DemoSecrets): Promise<void> {
  await mkdir(join(dataDir, DEMO_SECRETS_FOLDER), { recursive: true, mode: 0o700 });
  for (const key of ['agent', 'transfer', 'appPassword', 'metrics'] as const) {
    await writePrivate(join(dataDir, DEMO_SECRET_FILES[key]), `${secrets[key]}\n`);
  }
}

export async function startDemo(deps: DemoDeps): Promise<RunningDemo> {
  const cloudRoot = join(deps.cwd, DEMO_CLOUD_FOLDER);
  const trashDir = join(deps.cwd, DEMO_TRASH_FOLDER);
  const dataDir = join(deps.cwd, DEMO_DATA_FOLDER);
  // Before anything is written: refused here, a second start changes no file.
  const lock = await holdDemoLock(dataDir, shown(deps.cwd, dataDir));
  const secrets = freshSecrets(deps.random);
  let cloud: DemoCloud | undefined;
  // Everything a failed start leaves is undone, the lock last.
  const undo = async (): Promise<void> => {
    await cloud?.close();
    await rm(join(dataDir, DEMO_SECRETS_FOLDER), { recursive: true, force: true });
    await lock.release();
  };
  const tokensFile = join(dataDir, TOKENS_FILE);
  try {
    await mkdir(cloudRoot, { recursive: true });
    const seeded = await seedDemoCloud(cloudRoot);
    await writeSecrets(dataDir, secrets);
    cloud = await deps.startCloud({
      root: cloudRoot,
      trashDir,
      user: DEMO_CLOUD_USER,
      password: secrets.appPassword,
      host: DEMO_HOST,
    });
    const cloudUrl = cloud.url;
    const { createCalendar, createAddressBook, addObject } = cloud;
    const groupware =
      createCalendar !== undefined && createAddressBook !== undefined && addObject !== undefined;
    if (groupware)
      seedDemoGroupware(
        {
          createCalendar: createCalendar.bind(cloud),
          createAddressBook: createAddressBook.bind(cloud),
          addObject: addObject.bind(cloud),
        },
        (deps.now ?? Date.now)(),
      );
    const preferred = deps.preferredPort ?? DEMO_PREFERRED_PORT;
    const { port, preferredBusy } = await choosePort(preferred, DEMO_HOST);
    const configFile = join(dataDir, DEMO_CONFIG_FILE);
    await writePrivate(configFile, demoConfigYaml({ cloudUrl, cloudUser: DEMO_CLOUD_USER, port }));

    // The console greets and prompts as soon as it starts; hold its output back until
    // the banner is printed, so the terminal reads top to bottom.
    const consoleOut = new PassThrough();
    const broker = await startBroker(configFile, {
      env: deps.env,
      writeLog: demoLogSink(deps.stderr),
      stdin: deps.stdin,
      stdout: consoleOut,
      interactive: deps.interactive === true,
      ...(deps.onQuit === undefined ? {} : { onQuit: deps.onQuit }),
    });
    const brokerUrl = broker.url;
    try {
      await writePrivate(tokensFile, tokensEnvFile(brokerUrl, secrets.transfer));
    } catch (error) {
      await broker.stop();
      throw error;
    }
    deps.stdout.write(
      renderBanner({
        brokerUrl,
        agentToken: secrets.agent,
        transferToken: secrets.transfer,
        ...(preferredBusy ? { preferredPortBusy: preferred } : {}),
        cloudUrl,
        cloudUser: DEMO_CLOUD_USER,
        cloudFolder: shown(deps.cwd, cloudRoot),
        trashFolder: shown(deps.cwd, trashDir),
        secretsFolder: shown(deps.cwd, join(dataDir, DEMO_SECRETS_FOLDER)),
        metricsTokenFile: shown(deps.cwd, join(dataDir, DEMO_SECRET_FILES.metrics)),
        dataFolder: shown(deps.cwd, dataDir),
        tokensFile: shown(deps.cwd, tokensFile),
        configFile: shown(deps.cwd, configFile),
        seeded,
        groupware,
        headless: deps.interactive !== true,
      }),
    );
    consoleOut.pipe(deps.stdout, { end: false });
    let stopped: Promise<void> | undefined;
    // Without input (`npm start < /dev/null`, a process manager) the console says that
    // approvals continue over the owner socket (`npx broker approve N` in this folder).

    return {
      brokerUrl,
      mcpUrl: `${brokerUrl}/mcp`,
      agentToken: secrets.agent,
      transferToken: secrets.transfer,
      tokensFile,
      broker,
      stop() {
        stopped ??= (async () => {
          try {
            await broker.stop();
          } finally {
            consoleOut.unpipe(deps.stdout);
            // The tokens die with this process; a stale file would only mislead.
            await rm(tokensFile, { force: true });
            await undo();
          }
        })();
        return stopped;
      },
    };
  } catch (error) {
    await undo();
    throw error;
  }
}
