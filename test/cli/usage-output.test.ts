/**
 * Every way out of the CLI prints the one JSON object on stdout (`status`, `error`,
 * `next_step`; exit 1 for a usage error), an unknown command and a bare `broker`
 * included; asking for help is not a command run and prints text (exit 0). The real CLI
 * as a subprocess.
 */
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { runCli } from '../../support/processes.js';

/** The one line of stdout, parsed; fails the test unless there is exactly one object. */
function onlyObject(stdout: string): Record<string, unknown> {
  const lines = stdout.split('\n').filter((l) => l !== '');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? '') as Record<string, unknown>;
}

describe('usage errors print the one JSON object', () => {
  it.each([
    [[], 'no command'],
    [['fecth', 'personal:a.txt'], 'unknown command "fecth"'],
    [['serve', '--bogus'], '--bogus'],
    [['doctor', '--config'], '--config'],
    [['start', '--bogus'], '--bogus'],
    [['fetch'], 'INSTANCE:PATH'],
    [['push', 'personal:a.txt', '--force'], '--force'],
  ])('broker %j → exit 1, stdout names the problem', async (args, says) => {
    const run = await runCli(args, {});
    expect(run.code).toBe(ExitCode.usage);
    const out = onlyObject(run.stdout);
    expect(out.status).toBe('failed');
    expect(String(out.error)).toContain(says);
    expect(String(out.next_step)).toContain('--help');
    expect(run.stderr).toContain(says);
  });

  it('an unknown command with control characters is escaped on both outputs', async () => {
    const run = await runCli(['\u001b[2Jboom'], {});
    expect(onlyObject(run.stdout).error).toContain('\u001b[2Jboom');
    expect(run.stdout).not.toContain('\u001b');
    expect(run.stderr).not.toContain('\u001b');
  });
});

describe('help is text, exit 0', () => {
  it.each([[['--help']], [['help']], [['fetch', '--help']], [['checkin', '-h']]])(
    'broker %j',
    async (args) => {
      const run = await runCli(args, {});
      expect(run.code).toBe(ExitCode.ok);
      expect(run.stdout).toMatch(/^Usage: broker/m);
    },
  );
});
