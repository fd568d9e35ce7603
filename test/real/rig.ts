/**
 * What a real-server test file works with: the daemon (the test harness, in process)
 * whose two instances (`personal`, and `shared` with discovery) are the owner's account
 * on the real server, MCP clients for both surfaces, the real `broker` CLI as a
 * subprocess, and direct WebDAV access as the owner (her own app password: "the owner's
 * own clients") and as the second user. The server is reset before the file's tests.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll } from 'vitest';
import { Dav } from './dav.js';
import { send } from './http.js';
import { realServer, type RealServer } from './server.js';
import { startBrokerOn, type BrokerOn, type BrokerOptions } from '../../support/daemon.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { startGateProxy, type GateProxy } from '../../support/gate-proxy.js';
import { runCli, type CliRun } from '../../support/processes.js';

export type RealBroker = BrokerOn;

export interface RealRig {
  server: RealServer;
  broker: RealBroker;
  /** The owner (the broker's account) on WebDAV directly. */
  owner: Dav;
  /** The second user on WebDAV directly. */
  other: Dav;
  agent: Client;
  transfer: Client;
  /** A fresh staging folder for the CLI. */
  stage(): string;
  /** The `broker` CLI against this daemon, staging in `stage`. */
  cli(args: readonly string[], stage: string): Promise<CliRun>;
  /** The owner shares a folder with the second user, who may then write in it. */
  share(path: string): Promise<void>;
  /** The second user shares a folder of theirs with the owner (a share she receives). */
  receive(path: string): Promise<void>;
  /**
   * Restarts the daemon on the same data (a rig made with `persist`): `broker`, `agent`
   * and `transfer` are the new daemon's afterwards.
   */
  restart(): Promise<void>;
  /** Between the broker and the server, when asked for (`useRealRig(…, { gate: true })`). */
  gate?: GateProxy;
}

/**
 * `from` shares the folder or file `path` of theirs with the other of the two users, as
 * the web UI does (an OCS user share, read-write, re-sharable).
 */
export async function shareWith(
  server: Pick<RealServer, 'url' | 'owner' | 'other'>,
  from: 'owner' | 'other',
  path: string,
): Promise<void> {
  const res = await send(server.url, {
    method: 'POST',
    target: '/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json',
    headers: {
      'OCS-APIRequest': 'true',
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({
      path: `/${path}`,
      shareType: '0',
      shareWith: server[from === 'owner' ? 'other' : 'owner'].user,
      permissions: '31',
    }).toString(),
    auth: server[from],
  });
  if (res.status !== 200) throw new Error(`sharing ${path}: ${res.status} ${res.text}`);
}

/**
 * Registers the file's hooks; the returned object is filled in before the first test.
 * With `gate`, the broker reaches the server through support/gate-proxy.ts (`rig.gate`),
 * so a test can stall a transfer half-way.
 */
export function useRealRig(opts: BrokerOptions = {}, through: { gate?: boolean } = {}): RealRig {
  const rig = {} as RealRig;
  beforeAll(async () => {
    const server = realServer();
    await server.reset();
    const gate = through.gate === true ? await startGateProxy(server.url) : undefined;
    const broker = await startBrokerOn(
      { url: gate?.url ?? server.url, user: server.owner.user, password: server.owner.password },
      opts,
      () => gate?.close() ?? Promise.resolve(),
    );
    Object.assign(rig, {
      server,
      broker,
      ...(gate === undefined ? {} : { gate }),
      owner: new Dav(server.url, server.owner),
      other: new Dav(server.url, server.other),
      agent: await broker.agent(),
      transfer: await broker.transfer(),
      stage: () => mkdtempSync(join(tmpdir(), 'broker-real-stage-')),
      cli: (args: readonly string[], stage: string) =>
        runCli(args, {
          BROKER_URL: rig.broker.url,
          BROKER_TRANSFER_TOKEN: TRANSFER_TOKEN,
          BROKER_STAGE_DIR: stage,
        }),
      share: (path: string) => shareWith(server, 'owner', path),
      receive: (path: string) => shareWith(server, 'other', path),
      restart: async () => {
        rig.broker = await rig.broker.restart();
        rig.agent = await rig.broker.agent();
        rig.transfer = await rig.broker.transfer();
      },
    } satisfies Omit<RealRig, 'gate'>);
  });
  afterAll(async () => {
    await rig.broker?.close();
    await rig.server?.reset();
  });
  return rig;
}
