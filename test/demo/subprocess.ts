/**
 * Runs `broker <args>` from source as a real subprocess in a chosen folder, with helpers
 * to wait for output and to type on its stdin.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
// Absolute, so the child resolves tsx even when its cwd is a temp folder.
const TSX = import.meta.resolve('tsx');

export interface BrokerProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with the stdout so far once `pattern` appears in it (after `from`). */
  waitFor(pattern: RegExp | string, opts?: { timeoutMs?: number; from?: number }): Promise<string>;
  waitForStderr(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  type(line: string): void;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function matches(text: string, pattern: RegExp | string): boolean {
  return typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text);
}

export function spawnBroker(
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): BrokerProcess {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const l of [...listeners]) l();
  };
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    notify();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    notify();
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      notify();
      resolve(code);
    }),
  );
  const wait = (
    read: () => string,
    pattern: RegExp | string,
    timeoutMs: number,
    from = 0,
  ): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const text = read();
        if (matches(text.slice(from), pattern)) {
          done();
          resolve(text);
        } else if (exitCode !== undefined) {
          done();
          reject(new Error(`exited (${exitCode}) before ${String(pattern)}:\n${out}\n${err}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${String(pattern)}:\n${out}\n${err}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitFor: (pattern, o = {}) => wait(() => out, pattern, o.timeoutMs ?? 20_000, o.from),
    waitForStderr: (pattern, timeoutMs = 20_000) => wait(() => err, pattern, timeoutMs),
    type: (line) => {
      child.stdin.write(`${line}\n`);
    },
    exited,
    async stop(signal = 'SIGTERM') {
      if (exitCode === undefined) child.kill(signal);
      return exited;
    },
  };
}
