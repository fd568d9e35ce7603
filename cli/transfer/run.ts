import { parseClientArgs } from './args.js';
import { TransferClient } from './broker-client.js';
import { readClientEnv } from './env.js';
import { processIo, report, type Io, type Outcome } from './output.js';
import { parseTarget, type RemoteTarget } from './target.js';

export interface ClientContext {
  readonly client: TransferClient;
  readonly stageRoot: string;
  readonly target: RemoteTarget;
  readonly local: string | undefined;
  readonly flags: ReadonlySet<string>;
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
): Promise<number> {
  return report(io, async () => {
    const { positional, flags } = parseClientArgs(args, allowedFlags, command);
    const target = parseTarget(positional[0]);
    const clientEnv = readClientEnv(env);
    return body({
      client: new TransferClient(clientEnv),
      stageRoot: clientEnv.stageRoot,
      target,
      local: positional[1],
      flags,
    });
  });
}
