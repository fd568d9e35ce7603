/**
 * Runs the real `broker` CLI as a subprocess (from source, through tsx) and parses its
 * one-JSON-object stdout.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));

export interface CliRun {
  code: number;
  json: Record<string, unknown>;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
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
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(lines[lines.length - 1] ?? '') as Record<string, unknown>;
      } catch {
        json = {};
      }
      resolve({ code: code ?? -1, json, stdout, stderr });
    });
  });
}
