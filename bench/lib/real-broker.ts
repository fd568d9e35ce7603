/**
 * The broker the real-server benchmarks measure: the server emptied first when NC_RESET
 * says how, then the compiled broker (with the node flags it ships with) on it, as
 * `personal`, from a config in `tmp`. `compiled` is the CLI build the runs use too
 * (undefined when the build failed: everything then runs from source).
 */
import { compiledCli } from './build.js';
import { run, type Server } from './real-server.js';
import { shippedNodeFlags } from '../../support/node-flags.js';
import { brokerEnv, ROOT, spawnBroker, writeBrokerConfig } from '../../support/processes.js';

export async function brokerOnRealServer(s: Server, tmp: string) {
  if (s.reset !== undefined) await run('sh', ['-c', s.reset], { timeout: 120_000 });
  const compiled = compiledCli();
  const config = writeBrokerConfig(tmp, { instances: { personal: s.url }, username: s.user });
  const broker = await spawnBroker(config, {
    nodeArgs: shippedNodeFlags(ROOT),
    env: { ...brokerEnv(), BENCH_NC_PASSWORD: s.password },
    ...(compiled === undefined ? {} : { compiledMain: compiled }),
  });
  return { broker, compiled };
}
