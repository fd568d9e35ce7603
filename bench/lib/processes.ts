/**
 * Child processes for the benchmarks, the soak and the fault tests: the fake Nextcloud
 * (`test/fakes/fake-nextcloud-main.ts`) and `broker serve` (`cli/main.ts`), each its own
 * node process run from source through tsx, so their memory can be read from /proc and
 * their CPU does not share the measuring process's event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI_MAIN = join(ROOT, 'cli', 'main.ts');
export const FAKE_NEXTCLOUD_MAIN = join(ROOT, 'test', 'fakes', 'fake-nextcloud-main.ts');
export const MAX_RSS_PRELOAD = join(ROOT, 'bench', 'lib', 'report-max-rss.mjs');

/**
 * How to run the `broker` command: from source through tsx, or a compiled cli/main.js
 * (see build.ts). Returns the node arguments before the command's own.
 */
export function cliArgs(compiledMain?: string): string[] {
  return compiledMain === undefined ? ['--import', 'tsx', CLI_MAIN] : [compiledMain];
}

export const AGENT_TOKEN = 'bench-agent-token-0123456789abcdef-0123456789';
export const TRANSFER_TOKEN = 'bench-transfer-token-0123456789abcdef-012345';
export const APP_PASSWORD = 'bench-app-password-5b2c9d1e';

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

function wrap(child: ChildProcess): Child {
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
function waitFor<T>(
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
    const onExit = (): void => {
      cleanup();
      reject(new Error(`${what}: process exited early\n${c.stderr().slice(-2000)}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what}: timed out\n${c.stderr().slice(-2000)}`));
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
    check();
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
  const args = ['--import', 'tsx', FAKE_NEXTCLOUD_MAIN, '--root', opts.root];
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

export const FLOOR_RELAY_MAIN = join(ROOT, 'bench', 'lib', 'floor-relay.mjs');

/**
 * The contract-floor relay (floor-relay.mjs) in its own process, relaying `fileUrl`;
 * `nodeArgs` are the broker's, so the floor runs under the same V8 settings.
 */
export async function spawnFloorRelay(
  fileUrl: string,
  user: string,
  password: string,
  nodeArgs: readonly string[] = [],
): Promise<Child & { readonly url: string }> {
  const c = wrap(
    spawn(process.execPath, [...nodeArgs, FLOOR_RELAY_MAIN, fileUrl, user, password], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const url = await waitFor(
    c,
    'floor relay',
    () => /listening on (http:\/\/\S+)/.exec(c.stdout())?.[1],
    10_000,
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
        `  ${name}: { url: ${JSON.stringify(url)}, username: alice, app_password_env: BENCH_NC_PASSWORD, discovery: false }`,
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

/** CPU time (user + system, seconds) a live process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 here; in ticks
    // of 100 Hz on Linux (USER_HZ).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Peak (VmHWM) and current (VmRSS) resident memory of a live process, in MiB. */
export function memoryOf(pid: number): { peakMiB: number; rssMiB: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number =>
      Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(text)?.[1] ?? NaN);
    return { peakMiB: kb('VmHWM') / 1024, rssMiB: kb('VmRSS') / 1024 };
  } catch {
    return undefined;
  }
}
