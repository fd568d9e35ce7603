/**
 * The progress line as a person sees it: the real `broker fetch` of a large file in a
 * pseudo-terminal (`script`), run directly and under `npx` (npm shares the terminal and
 * draws its own spinner around the command), and with stderr a pipe, where no bar is
 * drawn at all. What arrives at the terminal must leave it clean: frames redrawn in
 * place within its width, no cursor or wrapping modes changed, the JSON on a line of
 * its own.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../../../support/daemon.js';
import { cliBundle } from '../../../support/cli-bundle.js';
import { clientEnv, ROOT, runCli, tempStage } from '../../../support/processes.js';
import { TERMINAL_MODES } from '../../../support/terminal.js';

const COLUMNS = 60;
let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
  await broker.fake.writeFile('Pty/big.bin', randomBytes(24 * 1024 * 1024));
  await broker.grant([{ path: 'Pty', mode: 'read' }]);
});
afterAll(async () => {
  await broker.close();
});

const envFor = (stage: string): Record<string, string> => clientEnv(broker.url, stage);
const stageDir = (): string => tempStage('pty');

/** Runs a shell command in a pseudo-terminal COLUMNS wide; resolves with what it printed. */
function inTerminal(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', `stty cols ${COLUMNS}; ${command}`, '/dev/null'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        npm_config_update_notifier: 'false',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

// The agent's file, as an agent's host runs it.
let bundle = '';
beforeAll(async () => {
  bundle = await cliBundle();
});
const cliCommand = (): string => `node ${bundle}`;

describe('the progress line in a terminal', () => {
  it.each([
    ['run directly', (args: string) => `${cliCommand()} ${args}`],
    ['under npx', (args: string) => `npx --offline -c '${cliCommand()} ${args}'`],
  ])('%s: redrawn in place, within the width, the JSON on its own line', async (_how, command) => {
    const { code, out } = await inTerminal(
      command('fetch personal:Pty/big.bin'),
      envFor(stageDir()),
    );
    expect(code).toBe(0);
    // Our frames: carriage return, the line, erase to its end. The last one says done.
    // eslint-disable-next-line no-control-regex
    const ours = out.match(/\rfetch \[[^\r\n]*?\x1b\[K/g) ?? [];
    expect(ours.length).toBeGreaterThan(0);
    for (const frame of ours) {
      expect(frame.slice(1, -3).length).toBeLessThan(COLUMNS);
    }
    expect(ours.at(-1)).toContain('100% | 24.0/24.0 MiB | done');
    // Nothing that would need restoring if the process were killed mid-transfer.
    expect(out).not.toMatch(TERMINAL_MODES);
    const json = out.split(/\r?\n/).find((l) => l.startsWith('{'));
    expect(JSON.parse(json ?? '')).toMatchObject({ status: 'fetched', size: 24 * 1024 * 1024 });
  });

  it('with stderr a pipe, no bar at all', async () => {
    const run = await runCli(['fetch', 'personal:Pty/big.bin'], envFor(stageDir()));
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
  });
});
