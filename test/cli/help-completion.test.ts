/**
 * The CLI answers what people type: `broker help COMMAND` and `broker COMMAND --help`
 * print that command's help with its example, `broker --help` names --version, help and
 * completion, and `broker completion bash|zsh` prints a script generated from the command
 * table, which bash parses and which completes what the table holds.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ExitCode, type Command } from '../../cli/command.js';
import { clientCommands } from '../../cli/client/commands/index.js';
import { commands } from '../../cli/main.js';
import { BUILTIN_WORDS, optionsOf } from '../../cli/completion.js';
import { clientMain } from '../../cli/client/main.js';
import { main } from '../../cli/main.js';

async function run(
  argv: string[],
  entry: typeof main = main,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await entry(argv, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
  });
  return { code, stdout, stderr };
}

/** The example lines of a command's help: `  broker <name> …` after `Example(s):`. */
function examples(command: Command): string[] {
  const section = /^Examples?:\n((?: {2}.*\n?)+)/m.exec(command.help)?.[1] ?? '';
  return section.split('\n').filter((l) => l.startsWith(`  broker ${command.name}`));
}

/** What bash's completion offers for `words` (the last one being completed). */
function bashCompletes(script: string, words: string[]): string[] {
  const array = words.map((w) => `'${w}'`).join(' ');
  const r = spawnSync(
    'bash',
    [
      '-c',
      `${script}\nCOMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _broker; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  expect(r.stderr).toBe('');
  return r.stdout.split('\n').filter((l) => l !== '');
}

/** What completes after `broker `: the table's commands, then help, completion and the flags. */
const firstWords = (table: readonly Command[]): string[] => [
  ...table.map((c) => c.name),
  ...BUILTIN_WORDS,
];

describe('help for one command', () => {
  it.each(commands.map((c) => [c.name, c]))(
    '`broker help %s` and `broker %s --help` print its help with its example',
    async (name, command) => {
      expect(examples(command), `${name}'s help has no "  broker ${name} …" example`).not.toEqual(
        [],
      );
      const viaHelp = await run(['help', name]);
      const viaFlag = await run([name, '--help']);
      expect(viaHelp.code).toBe(ExitCode.ok);
      expect(viaHelp.stdout).toBe(viaFlag.stdout);
      for (const example of examples(command)) expect(viaHelp.stdout).toContain(example);
    },
  );

  it('the agent file answers `broker help fetch` the same way', async () => {
    const r = await run(['help', 'fetch'], clientMain);
    expect(r.code).toBe(ExitCode.ok);
    expect(r.stdout).toContain('  broker fetch personal:Documents/report.odt');
  });

  it('`broker help nosuch` is a usage error naming the command', async () => {
    const r = await run(['help', 'nosuch']);
    expect(r.code).toBe(ExitCode.usage);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('"nosuch"'),
    });
  });

  it('`broker --help` names help COMMAND, --version and completion', async () => {
    for (const entry of [main, clientMain]) {
      const r = await run(['--help'], entry);
      expect(r.stdout).toContain('broker help COMMAND');
      expect(r.stdout).toContain('broker --version');
      expect(r.stdout).toContain('broker completion bash|zsh');
    }
  });
});

describe('shell completion', () => {
  it.each(['bash', 'zsh'])('the %s script lists every command and its options', async (shell) => {
    const r = await run(['completion', shell]);
    expect(r.code).toBe(ExitCode.ok);
    for (const c of commands) {
      expect(r.stdout).toContain(shell === 'bash' ? `${c.name}) opts=` : `'${c.name}:`);
      for (const option of optionsOf(c)) expect(r.stdout).toContain(option);
    }
  });

  it('the bash script parses (bash -n)', async () => {
    const { stdout } = await run(['completion', 'bash']);
    const check = spawnSync('bash', ['-n'], { input: stdout, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });

  it('bash completes the commands, a command after help, the shells, and options', async () => {
    const { stdout: script } = await run(['completion', 'bash']);
    expect(bashCompletes(script, ['broker', ''])).toEqual(firstWords(commands));
    expect(bashCompletes(script, ['broker', 'ch'])).toEqual(['checkout', 'checkin']);
    expect(bashCompletes(script, ['broker', 'help', 'fe'])).toEqual(['fetch']);
    expect(bashCompletes(script, ['broker', 'completion', ''])).toEqual(['bash', 'zsh']);
    expect(bashCompletes(script, ['broker', 'fetch', 'personal:a', '--f'])).toEqual(['--force']);
    expect(bashCompletes(script, ['broker', 'checkin', '--'])).toEqual(['--abandon', '--help']);
  });

  it('the agent file completes its own commands only', async () => {
    const { stdout } = await run(['completion', 'bash'], clientMain);
    expect(bashCompletes(stdout, ['broker', ''])).toEqual(firstWords(clientCommands));
  });

  it.each([[['completion']], [['completion', 'fish']], [['completion', 'bash', 'x']]])(
    '`broker %j` is a usage error naming the shells',
    async (argv) => {
      const r = await run(argv);
      expect(r.code).toBe(ExitCode.usage);
      expect(JSON.parse(r.stdout)).toMatchObject({
        status: 'failed',
        next_step: expect.stringContaining('broker completion bash'),
      });
    },
  );

  it('`broker help completion` and `broker completion --help` explain how to load it', async () => {
    for (const argv of [
      ['help', 'completion'],
      ['completion', '--help'],
    ]) {
      const r = await run(argv);
      expect(r.code).toBe(ExitCode.ok);
      expect(r.stdout).toContain('source <(broker completion bash)');
    }
  });
});
