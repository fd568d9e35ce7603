/**
 * Runs several commands at the same time, each line of their output prefixed with the
 * job's name as it arrives, and waits for all of them. Used where the jobs neither share
 * a resource nor fill the machine alone: the static checks (each single-threaded) and the
 * two real-server suites (each waits on its own Nextcloud most of the time).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

export interface Job {
  name: string;
  command: string;
  args: string[];
}

export interface JobResult {
  name: string;
  code: number;
  seconds: number;
}

function relay(from: Readable, to: Writable, prefix: string): void {
  createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => {
    to.write(`${prefix}${line}\n`);
  });
}

function runJob(job: Job, width: number): Promise<JobResult> {
  const started = Date.now();
  const prefix = `[${job.name}]`.padEnd(width + 3);
  return new Promise((resolve) => {
    const child = spawn(job.command, job.args, {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    relay(child.stdout, process.stdout, prefix);
    relay(child.stderr, process.stderr, prefix);
    const done = (code: number): void =>
      resolve({ name: job.name, code, seconds: Math.round((Date.now() - started) / 1000) });
    child.on('error', (error) => {
      process.stderr.write(`${prefix}could not start ${job.command}: ${error.message}\n`);
      done(127);
    });
    child.on('close', (code, signal) => done(code ?? (signal === null ? 1 : 128)));
  });
}

/** Runs the jobs side by side; resolves to 0 when every one exited 0, else 1, having said which failed. */
export async function runTogether(jobs: readonly Job[]): Promise<number> {
  const width = Math.max(...jobs.map((j) => j.name.length));
  const results = await Promise.all(jobs.map((j) => runJob(j, width)));
  for (const r of results)
    process.stdout.write(
      `${r.name}: ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} in ${r.seconds} s\n`,
    );
  return results.every((r) => r.code === 0) ? 0 : 1;
}

/** An npm script of this package as a job. */
export const npmScript = (name: string): Job => ({
  name,
  command: 'npm',
  args: ['run', '-s', name],
});
