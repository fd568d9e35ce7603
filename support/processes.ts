/**
 * Child processes for the tests, the benchmarks, the soak and the review: the fake
 * Nextcloud (`fakes/nextcloud-main.ts`), `broker serve` as a daemon and any `broker`
 * command (`cli/main.ts`), each its own node process run from source through tsx (or a
 * compiled cli/main.js; a client command as the agent's file, see cli-bundle.ts), so
 * their memory can be read from /proc and their CPU does not share the measuring
 * process's event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliBundle, isClientCommand } from './cli-bundle.js';
import { AGENT_TOKEN, APP_PASSWORD, TRANSFER_TOKEN } from './tokens.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI_MAIN = join(ROOT, 'cli', 'main.ts');
// Absolute, so a child resolves tsx even when its cwd is a temp folder.
const TSX = import.meta.resolve('tsx');
export const FAKE_NEXTCLOUD_MAIN = join(ROOT, 'fakes', 'nextcloud-main.ts');

/**
 * How to run the `broker` command: from source through tsx, or a compiled cli/main.js
 * (see build.ts). Returns the node arguments before the command's own.
 */
export function cliArgs(compiledMain?: string): string[] {
  return compiledMain === undefined ? ['--import', TSX, CLI_MAIN] : [compiledMain];
}

export interface Child {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<number | string>;
}

export function wrap(child: ChildProcess): Child {
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  if (child.pid === undefined) throw new Error('child process did not start');
  const pid = child.pid;
  return {
    child,
    pid,
    stderr: () => err,
    stdout: () => out,
    exited,
    async stop(graceMs = 5_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        timer.unref();
        const code = await exited;
        clearTimeout(timer);
        return code;
      }
      return exited;
    },
  };
}

/** Waits until `find` returns a value for the output seen so far. */
export function waitFor<T>(
  c: Child,
  what: string,
  find: () => T | undefined,
  timeoutMs: number,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const found = find();
      if (found === undefined) return false;
      cleanup();
      resolve(found);
      return true;
    };
    const output = (): string => `${c.stdout().slice(-2000)}\n${c.stderr().slice(-2000)}`;
    const onExit = (): void => {
      if (check()) return;
      cleanup();
      reject(new Error(`${what}: process exited early\n${output()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what}: timed out\n${output()}`));
    }, timeoutMs);
    const onData = (): void => void check();
    const cleanup = (): void => {
      clearTimeout(timer);
      c.child.stdout?.off('data', onData);
      c.child.stderr?.off('data', onData);
      c.child.off('exit', onExit);
    };
    c.child.stdout?.on('data', onData);
    c.child.stderr?.on('data', onData);
    c.child.once('exit', onExit);
    if (!check() && (c.child.exitCode !== null || c.child.signalCode !== null)) onExit();
  });
}

export interface FakeNextcloudChild extends Child {
  readonly url: string;
}

/** `npm run fake-nextcloud` without npm in between: the fake in its own process. */
export async function spawnFakeNextcloud(opts: {
  root: string;
  password?: string;
  port?: number;
}): Promise<FakeNextcloudChild> {
  const args = ['--import', TSX, FAKE_NEXTCLOUD_MAIN, '--root', opts.root];
  args.push('--password', opts.password ?? APP_PASSWORD);
  if (opts.port !== undefined) args.push('--port', String(opts.port));
  const c = wrap(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const url = await waitFor(
    c,
    'fake nextcloud',
    () => /listening on (http:\/\/\S+)/.exec(c.stdout())?.[1],
    20_000,
  );
  return { ...c, url };
}

export interface BrokerConfigOptions {
  /** Instance name → Nextcloud URL. */
  instances: Record<string, string>;
  port?: number;
  dataDir?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Extra top-level YAML lines (e.g. a lifecycle block). */
  extra?: string[];
  /** The instances' Nextcloud user. Default alice (the fake's). */
  username?: string;
}

/** Writes a broker config (console approval; secrets through the environment). */
export function writeBrokerConfig(dir: string, o: BrokerConfigOptions): string {
  const file = join(dir, 'config.yaml');
  const lines = [
    `server: { host: 127.0.0.1, port: ${o.port ?? 0}, allowed_hosts: [localhost, 127.0.0.1] }`,
    'tokens: { agent_env: BENCH_AGENT_TOKEN, transfer_env: BENCH_TRANSFER_TOKEN }',
    'approval: console',
    `data_dir: ${JSON.stringify(o.dataDir ?? './data')}`,
    `logging: { level: ${o.logLevel ?? 'info'} }`,
    ...(o.extra ?? []),
    'instances:',
    ...Object.entries(o.instances).map(
      ([name, url]) =>
        `  ${name}: { url: ${JSON.stringify(url)}, username: ${JSON.stringify(o.username ?? 'alice')}, app_password_env: BENCH_NC_PASSWORD, discovery: false }`,
    ),
    '',
  ];
  writeFileSync(file, lines.join('\n'), { mode: 0o600 });
  return file;
}

export const brokerEnv = (): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  BENCH_AGENT_TOKEN: AGENT_TOKEN,
  BENCH_TRANSFER_TOKEN: TRANSFER_TOKEN,
  BENCH_NC_PASSWORD: APP_PASSWORD,
});

export interface BrokerChild extends Child {
  readonly url: string;
  /** Types a line on the approval console (stdin), e.g. `approve 3`. */
  type(line: string): void;
  /** Waits until the console (stdout) has printed text matching `pattern` after `from`. */
  waitConsole(pattern: RegExp, from?: number, timeoutMs?: number): Promise<RegExpExecArray>;
}

/**
 * `broker serve --config FILE` as a subprocess (`node [nodeArgs] <cli> serve …`, the cli
 * from source through tsx unless `compiledMain` is given). Resolves once the JSON log
 * says `broker listening` (so the config's log level must be info or debug).
 */
export async function spawnBroker(
  config: string,
  opts: {
    nodeArgs?: string[];
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
    compiledMain?: string;
  } = {},
): Promise<BrokerChild> {
  const c = wrap(
    spawn(
      process.execPath,
      [...(opts.nodeArgs ?? []), ...cliArgs(opts.compiledMain), 'serve', '--config', config],
      { cwd: ROOT, env: opts.env ?? brokerEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
    ),
  );
  const port = await waitFor(
    c,
    'broker serve',
    () => {
      for (const line of c.stderr().split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg === 'broker listening' && typeof entry.port === 'number') return entry.port;
        } catch {
          // a partial line: wait for the rest
        }
      }
      return undefined;
    },
    opts.timeoutMs ?? 20_000,
  );
  const url = `http://127.0.0.1:${port}`;
  return {
    ...c,
    url,
    type: (line) => c.child.stdin?.write(`${line}\n`),
    waitConsole: (pattern, from = 0, timeoutMs = 10_000) =>
      waitFor(
        c,
        `console ${String(pattern)}`,
        () => pattern.exec(c.stdout().slice(from)) ?? undefined,
        timeoutMs,
      ),
  };
}

/** `broker <args>` run interactively: its output so far, waits on it, typing on stdin. */
export interface BrokerProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the stdout so far once `pattern` appears in it (after `from`). */
  waitFor(pattern: RegExp | string, opts?: { timeoutMs?: number; from?: number }): Promise<string>;
  waitForStderr(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  type(line: string): void;
  /** The exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function matches(text: string, pattern: RegExp | string): boolean {
  return typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text);
}

/** Runs `broker <args>` from source in `opts.cwd` (the demo, `start` with a config). */
export function spawnBrokerCommand(
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): BrokerProcess {
  const c = wrap(
    spawn(process.execPath, [...cliArgs(), ...args], {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const exited = c.exited.then((code) => (typeof code === 'number' ? code : null));
  const wait = (read: () => string, pattern: RegExp | string, timeoutMs: number, from = 0) =>
    waitFor(
      c,
      `waiting for ${String(pattern)}`,
      () => {
        const text = read();
        return matches(text.slice(from), pattern) ? text : undefined;
      },
      timeoutMs,
    );
  return {
    child: c.child,
    stdout: c.stdout,
    stderr: c.stderr,
    waitFor: (pattern, o = {}) => wait(c.stdout, pattern, o.timeoutMs ?? 20_000, o.from),
    waitForStderr: (pattern, timeoutMs = 20_000) => wait(c.stderr, pattern, timeoutMs),
    type: (line) => {
      c.child.stdin?.write(`${line}\n`);
    },
    exited,
    async stop(signal = 'SIGTERM') {
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill(signal);
      return exited;
    },
  };
}

/** What a `broker` client command needs: the broker, the transfer token, a staging folder. */
export const clientEnv = (brokerUrl: string, stage: string): Record<string, string> => ({
  BROKER_URL: brokerUrl,
  BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
  BROKER_STAGE_DIR: stage,
});

/** A fresh, empty folder under the system's temp folder, for one test's staging. */
export const tempStage = (label: string): string => mkdtempSync(join(tmpdir(), `broker-${label}-`));

export interface CliRun {
  code: number;
  json: Record<string, unknown>;
  stdout: string;
  stderr: string;
}

/**
 * The node arguments that run `broker <args>` as the package's bin does: a client
 * command runs the agent's file (built from source, see cli-bundle.ts), any other the
 * full CLI from source.
 */
export async function brokerCommandArgs(args: readonly string[]): Promise<string[]> {
  return isClientCommand(args[0]) ? [await cliBundle(), ...args] : [...cliArgs(), ...args];
}

/** Runs one `broker <args>` to its end and parses its one-JSON-object stdout. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<CliRun> {
  const nodeArgs = await brokerCommandArgs(args);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs, {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const lines = stdout.trim().split('\n');
      let json: Record<string, unknown>;
      try {
        json = JSON.parse(lines[lines.length - 1] ?? '') as Record<string, unknown>;
      } catch {
        json = {};
      }
      resolve({ code: code ?? -1, json, stdout, stderr });
    });
  });
}
