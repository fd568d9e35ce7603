import { looksLikeTarget, parseClientArgs } from './args.js';
import { TransferClient } from './broker-client.js';
import { readClientEnv } from './env.js';
import { jsonLine, processIo, type Io } from '../../terminal.js';
import { settle, type Outcome, type Settled } from './output.js';
import { progressFor, type ProgressFactory } from './progress.js';
import { StateStore } from './state.js';
import { parseTarget, type RemoteTarget } from './target.js';

export interface ClientContext {
  readonly client: TransferClient;
  readonly stageRoot: string;
  readonly state: StateStore;
  readonly target: RemoteTarget;
  /** Every INSTANCE:PATH named (one, unless the command takes several). */
  readonly targets: readonly RemoteTarget[];
  readonly local: string | undefined;
  readonly flags: ReadonlySet<string>;
  /** A note for whoever runs the command: on stderr, and in the JSON's `warnings`. */
  readonly warn: (note: string) => void;
  /** How the transfer shows its progress: the terminal's bar, or MCP notifications. */
  readonly progress: ProgressFactory;
}

/**
 * One client command's work, apart from how it is asked for: `broker <name>` on the
 * command line and the `<name>` tool of `broker mcp` run the same body.
 */
export interface ClientTransfer {
  readonly name: 'fetch' | 'push' | 'checkout' | 'checkin';
  /** The `--flags` it takes. */
  readonly flags: readonly string[];
  /** Whether it takes several targets in one call (`broker fetch a b c`). */
  readonly several?: boolean;
  readonly body: (ctx: ClientContext) => Promise<Outcome>;
}

/**
 * The frame every client command shares: arguments, environment, one broker client;
 * resolves with the contract's answer and exit code (human text goes to `stderr`).
 */
export function settleClientTransfer(
  transfer: ClientTransfer,
  args: readonly string[],
  stderr: (text: string) => void,
  env: NodeJS.ProcessEnv = process.env,
  progress: ProgressFactory = progressFor,
  /** Judges a `local` path before anything is done (`broker mcp`: cli/mcp/area.ts). */
  checkLocal?: (local: string, stageRoot: string) => Promise<void>,
): Promise<Settled> {
  return settle(stderr, async (warn) => {
    const { positional, flags } = parseClientArgs(
      args,
      transfer.flags,
      transfer.name,
      transfer.several ?? false,
    );
    const target = parseTarget(positional[0]);
    const targets =
      positional.length > 1 && looksLikeTarget(positional[1] ?? '')
        ? positional.map(parseTarget)
        : [target];
    const clientEnv = readClientEnv(env);
    const local = targets.length > 1 ? undefined : positional[1];
    if (local !== undefined) await checkLocal?.(local, clientEnv.stageRoot);
    return transfer.body({
      client: new TransferClient(clientEnv),
      stageRoot: clientEnv.stageRoot,
      state: new StateStore(clientEnv.stateDir),
      target,
      targets,
      local,
      flags,
      warn,
      progress,
    });
  });
}

/** `broker <name> …`: the answer as one JSON object on stdout; resolves with the exit code. */
export async function runClientCommand(
  transfer: ClientTransfer,
  args: readonly string[],
  io: Io = processIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { answer, exitCode } = await settleClientTransfer(transfer, args, io.stderr, env);
  io.stdout(jsonLine(answer));
  return exitCode;
}
