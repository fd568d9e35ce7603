/**
 * `broker serve [--config FILE]` (docs/contracts.md §6): runs the daemon until SIGTERM or SIGINT,
 * then stops accepting, drains in-flight requests, closes the audit log and exits 0.
 * Logs are JSON lines on stderr; the approval console (approval: console) uses stdin
 * and stdout.
 */
import { errorLine } from '../../broker/base/errors.js';
import { configFile, parseConfigArg } from './config-arg.js';
import { type Command, ExitCode } from '../command.js';
import { usageFailure } from '../usage.js';

const HELP = `Usage: broker serve [--config FILE]

Runs the Nextcloud Access Broker daemon: the agent surface (POST /mcp), the transfer
surface (POST /transfer, /transfer/blobs/…) and GET /health, on server.host:server.port.
Stops cleanly on SIGTERM or SIGINT (drains in-flight requests, flushes the audit log).

Options:
  --config FILE   the configuration (default: $BROKER_CONFIG, else ./config.yaml)

With approval: console, requests appear on stdout and the owner types at the
"broker>" prompt; "quit" or Ctrl-D stops the broker. When stdin is not a terminal the
console runs headless. In every approval mode the owner's commands (broker approve,
deny, revoke, status, grants) reach the daemon over <data_dir>/owner.sock.

Logs: one JSON object per line on stderr, secrets scrubbed.
Exit codes: 0 stopped cleanly · 1 bad usage or configuration · 2 could not start

Example:
  broker serve --config /etc/broker/config.yaml
`;

export interface ServeIo {
  env: NodeJS.ProcessEnv;
  cwd: () => string;
  /** Only a usage error writes here; the running daemon's stdout is the approval console. */
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT). */
  stopSignal: () => Promise<string>;
}

const processSignal = (): Promise<string> =>
  new Promise((done) => {
    const on = (signal: string) => () => {
      process.off('SIGTERM', term);
      process.off('SIGINT', int);
      done(signal);
    };
    const term = on('SIGTERM');
    const int = on('SIGINT');
    process.once('SIGTERM', term);
    process.once('SIGINT', int);
  });

export function createServeCommand(io: ServeIo): Command {
  return {
    name: 'serve',
    summary: 'run the broker daemon (serve [--config FILE])',
    help: HELP,
    async run(args) {
      const parsed = parseConfigArg(args);
      if (!parsed.ok) {
        return usageFailure(io, 'broker serve', parsed.error, 'run `broker serve --help`');
      }
      const file = configFile(io.cwd(), io.env, parsed.config);
      // Listen for the signal before starting, so a stop during start-up is not lost.
      let quit: (why: string) => void = () => undefined;
      const stopping = Promise.race([
        io.stopSignal(),
        new Promise<string>((resolve) => (quit = resolve)),
      ]);
      const { startBroker } = await import('../../broker/main.js');
      const { ConfigError } = await import('../../broker/config.js');
      let running: Awaited<ReturnType<typeof startBroker>>;
      try {
        running = await startBroker(file, {
          env: io.env,
          writeLog: io.stderr,
          stdin: process.stdin,
          stdout: process.stdout,
          interactive: process.stdin.isTTY === true && process.stdout.isTTY === true,
          onQuit: (why) => quit(why),
        });
      } catch (error) {
        if (error instanceof ConfigError) {
          io.stderr(`broker serve: ${error.message}\n`);
          return ExitCode.usage;
        }
        io.stderr(`broker serve: could not start: ${errorLine(error)}\n`);
        return ExitCode.infrastructure;
      }
      const signal = await stopping;
      running.logger.info('stopping', { signal });
      await running.stop();
      // Everything is closed; should a library still hold a handle, do not hang the stop.
      setTimeout(() => process.exit(ExitCode.ok), 3_000).unref();
      return ExitCode.ok;
    },
  };
}

export const serveCommand: Command = createServeCommand({
  env: process.env,
  cwd: () => process.cwd(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stopSignal: processSignal,
});
