/**
 * Runs the real `broker` CLI (or the direct baseline client) as a subprocess and
 * measures it: wall time, exit code, its one-JSON-object stdout, its peak RSS and CPU
 * time (getrusage, via report-max-rss.mjs).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBundle, isClientCommand } from '../../support/cli-bundle.js';
import { cliArgs, ROOT } from '../../support/processes.js';
import { MAX_RSS_PRELOAD } from './processes.js';

export interface MeasuredRun {
  code: number;
  json: Record<string, unknown>;
  stderr: string;
  ms: number;
  /** Peak resident set size in MiB. */
  peakMiB: number;
  /** CPU time (user + system) in seconds. */
  cpuSeconds: number;
}

/**
 * `broker <args>` measured: a client command runs the agent's file (as agents run it,
 * support/cli-bundle.ts), any other the CLI compiled by tsc (or from source).
 */
export async function runCliMeasured(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  compiledMain?: string,
): Promise<MeasuredRun> {
  const runner = isClientCommand(args[0]) ? [await cliBundle()] : cliArgs(compiledMain);
  return runNodeMeasured([...runner, ...args], env);
}

/** The direct baseline client (direct-transfer.mjs) as its own process, measured alike. */
export function runDirectMeasured(
  method: 'GET' | 'GET-SHA256' | 'PUT' | 'PUT-SHA256' | 'CHUNKED',
  url: string,
  file: string,
  user: string,
  password: string,
  env: NodeJS.ProcessEnv = {},
): Promise<MeasuredRun> {
  return runNodeMeasured([DIRECT_CLIENT, method, url, file, user, password], env);
}

const DIRECT_CLIENT = join(ROOT, 'bench', 'lib', 'direct-transfer.mjs');

async function runNodeMeasured(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<MeasuredRun> {
  const dir = mkdtempSync(join(tmpdir(), 'broker-cli-rss-'));
  const rssFile = join(dir, 'maxrss');
  try {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', MAX_RSS_PRELOAD, ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...env,
        BENCH_MAX_RSS_FILE: rssFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (c) => resolve(c ?? -1));
    });
    const ms = performance.now() - started;
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
    } catch {
      json = {};
    }
    let usage = { maxRSS: Number.NaN, cpuMicros: Number.NaN };
    try {
      usage = JSON.parse(readFileSync(rssFile, 'utf8')) as typeof usage;
    } catch {
      // killed before its exit handler ran: no figures
    }
    return {
      code,
      json,
      stderr,
      ms,
      peakMiB: usage.maxRSS / 1024,
      cpuSeconds: usage.cpuMicros / 1e6,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
