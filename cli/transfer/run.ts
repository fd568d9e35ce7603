import { looksLikeTarget, parseClientArgs } from './args.js';
import { TransferClient } from './broker-client.js';
import { readClientEnv } from './env.js';
import { processIo, report, type Io, type Outcome } from './output.js';
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
}

/**
 * The frame every client command shares: arguments, environment, one broker client,
 * and the contract's output and exit code.
 */
export function runClientCommand(
  command: string,
  args: readonly string[],
  allowedFlags: readonly string[],
  body: (ctx: ClientContext) => Promise<Outcome>,
  io: Io = processIo,
  env: NodeJS.ProcessEnv = process.env,
  several = false,
): Promise<number> {
  return report(io, async (warn) => {
    const { positional, flags } = parseClientArgs(args, allowedFlags, command, several);
    const target = parseTarget(positional[0]);
    const targets =
      positional.length > 1 && looksLikeTarget(positional[1] ?? '')
        ? positional.map(parseTarget)
        : [target];
    const clientEnv = readClientEnv(env);
    return body({
      client: new TransferClient(clientEnv),
      stageRoot: clientEnv.stageRoot,
      state: new StateStore(clientEnv.stateDir),
      target,
      targets,
      local: targets.length > 1 ? undefined : positional[1],
      flags,
      warn,
    });
  });
}
