/**
 * `broker start` (what `npm start` runs): with a configuration it is exactly
 * `broker serve`; without one it starts a local demo (fake Nextcloud in ./data/demo-cloud,
 * broker state in ./data/demo, approval console on this terminal).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { errorLine } from '../../broker/base/errors.js';
import type { StartCloud } from '../../broker/demo/run.js';
import { type Command, ExitCode } from '../command.js';
import { usageFailure } from '../usage.js';
import { createServeCommand } from './serve.js';

const HELP = `Usage: broker start [--config FILE]

With a configuration (--config FILE, $BROKER_CONFIG, or ./config.yaml in this folder)
this is exactly \`broker serve\`.

Without one it starts a demo on 127.0.0.1, touching nothing real:
  - a fake Nextcloud serving ./data/demo-cloud (example files added on first run,
    existing files never overwritten), instance name "demo"; its trash bin is
    ./data/demo-cloud-trash, kept across restarts;
  - the broker on port 8765 (or a free port if that is busy) with fresh random tokens,
    its grant database and audit log in ./data/demo, its secrets in
    ./data/demo/secrets (mode 0600; \`broker doctor --config data/demo/config.yaml\`
    checks the running demo);
  - the approval console on this terminal: type "approve N", "deny N", "show N",
    "status", "help", "quit" (N is the number shown with each request); or from
    another shell in this folder: broker approve N, broker deny N, broker grants.
    When stdin is not a terminal the demo runs headless: decide from another shell.
It prints the MCP URL, the agent token, a ready-to-paste MCP client config and the
BROKER_URL / BROKER_TRANSFER_TOKEN lines for the CLI (also in ./data/demo/tokens.env,
mode 0600, removed when the demo stops). Ctrl-C stops it cleanly. A second start while
a demo runs in the same folder is refused and changes nothing.

Exit codes: 0 stopped cleanly · 1 bad usage or configuration · 2 could not start
            (for instance: a demo already runs here)

Examples:
  npm start
  broker start --config /etc/broker/config.yaml
`;

export interface StartIo {
  env: NodeJS.ProcessEnv;
  cwd: () => string;
  /** Read lazily: touching process.stdin early would open the terminal for every command. */
  stdin: () => Readable;
  stdout: () => Writable;
  stderr: (text: string) => void;
  stopSignal: () => Promise<string>;
  /** `broker serve`, run when a configuration is present. */
  serve: Command;
  /** Loaded only for the demo (fakes/, compiled into dist/ by the build). */
  loadCloud: () => Promise<StartCloud>;
}

/** True when the arguments or the environment name a config, or ./config.yaml exists. */
export function hasConfig(args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): boolean {
  if (args.some((a) => a === '--config' || a.startsWith('--config='))) return true;
  if (env.BROKER_CONFIG !== undefined && env.BROKER_CONFIG !== '') return true;
  return existsSync(resolve(cwd, 'config.yaml'));
}

const isTerminal = (stream: Readable | Writable): boolean =>
  (stream as { isTTY?: boolean }).isTTY === true;

export function createStartCommand(io: StartIo): Command {
  return {
    name: 'start',
    summary: 'serve with ./config.yaml, or without one start a local demo (npm start)',
    help: HELP,
    async run(args) {
      const cwd = io.cwd();
      if (hasConfig(args, io.env, cwd)) return io.serve.run(args);
      if (args.length > 0) {
        return usageFailure(
          { stdout: (text) => io.stdout().write(text), stderr: io.stderr },
          'broker start',
          `unknown argument "${args[0] ?? ''}"`,
          'run `broker start --help`',
        );
      }
      let quit: (why: string) => void = () => undefined;
      const stopping = Promise.race([
        io.stopSignal(),
        new Promise<string>((resolve) => (quit = resolve)),
      ]);
      const { startDemo } = await import('../../broker/demo/run.js');
      let demo: Awaited<ReturnType<typeof startDemo>>;
      const stdin = io.stdin();
      const stdout = io.stdout();
      try {
        demo = await startDemo({
          cwd,
          env: io.env,
          stdin,
          stdout,
          interactive: isTerminal(stdin) && isTerminal(stdout),
          onQuit: (why) => quit(why),
          stderr: io.stderr,
          startCloud: await io.loadCloud(),
        });
      } catch (error) {
        io.stderr(`broker start: the demo could not start: ${errorLine(error)}\n`);
        return ExitCode.infrastructure;
      }
      const signal = await stopping;
      io.stderr(`\nbroker start: ${signal}, stopping the demo…\n`);
      await demo.stop();
      io.stderr('broker start: stopped (audit log flushed).\n');
      // Everything is closed; should a handle (the terminal's stdin) linger, do not hang.
      setTimeout(() => process.exit(ExitCode.ok), 3_000).unref();
      return ExitCode.ok;
    },
  };
}

/**
 * Resolves on the first SIGTERM/SIGINT. The handlers stay installed: under `npm start`
 * a Ctrl-C reaches this process twice (from the terminal's process group and forwarded
 * by npm), and a default-handled second signal would kill it mid-shutdown. A repeat
 * within a second is ignored; a later one forces the exit (the audit log recovers a torn
 * tail on its next start).
 */
export function stopOnSignal(
  proc: Pick<NodeJS.Process, 'on'> = process,
  now: () => number = Date.now,
  forceExit: (code: number) => void = (code) => process.exit(code),
  stderr: (text: string) => void = (text) => process.stderr.write(text),
): Promise<string> {
  return new Promise((resolve) => {
    let first: number | undefined;
    const on = (signal: string) => () => {
      if (first === undefined) {
        first = now();
        resolve(signal);
      } else if (now() - first > 1_000) {
        stderr(`broker: ${signal} again, exiting without finishing the shutdown\n`);
        forceExit(130);
      }
    };
    proc.on('SIGTERM', on('SIGTERM'));
    proc.on('SIGINT', on('SIGINT'));
  });
}

const stderr = (text: string): void => {
  process.stderr.write(text);
};

export const startCommand: Command = createStartCommand({
  env: process.env,
  cwd: () => process.cwd(),
  stdin: () => process.stdin,
  stdout: () => process.stdout,
  stderr,
  stopSignal: () => stopOnSignal(),
  // `broker serve` itself, only with the repeat-tolerant signal handling above.
  serve: createServeCommand({
    env: process.env,
    cwd: () => process.cwd(),
    stdout: (text) => process.stdout.write(text),
    stderr,
    stopSignal: () => stopOnSignal(),
  }),
  loadCloud: async () => {
    const { startFakeNextcloud } = await import('../../fakes/nextcloud.js');
    return (opts) => startFakeNextcloud(opts);
  },
});
