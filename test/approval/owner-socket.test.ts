/**
 * The owner socket: the approval console's commands from another shell of the broker's
 * user. Real sockets in a temp folder, the real engine, store and audit log.
 */
import { chmodSync, linkSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { askOwner } from '../../broker/approval/owner/client.js';
import { OWNER_SOCKET_FILE } from '../../broker/approval/owner/protocol.js';
import { OwnerSocketError } from '../../broker/approval/owner/safety.js';
import { OwnerSocket, SOCKET_ACTOR } from '../../broker/approval/owner/server.js';
import { memoryLogger } from '../../broker/base/log.js';
import { harness, LIFECYCLE, type Harness } from '../../support/approval.js';

let h: Harness;
let socket: OwnerSocket;
const logger = memoryLogger();

function ownerSocket(over: { uid?: number } = {}): OwnerSocket {
  return new OwnerSocket({
    dir: h.dir,
    engine: h.engine,
    store: h.store,
    now: () => h.clock.now,
    pendingTimeout: LIFECYCLE.pending_timeout,
    logger,
    ...over,
  });
}

beforeEach(async () => {
  h = await harness({ channel: 'console' });
  socket = ownerSocket();
});

afterEach(async () => {
  await socket.stop();
  await h.close();
});

describe('owner socket', () => {
  it('is created 0600 in the private data folder and removed at stop', async () => {
    await socket.start();
    const path = join(h.dir, OWNER_SOCKET_FILE);
    expect(statSync(path).isSocket()).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await socket.stop();
    expect(() => statSync(path)).toThrow(/ENOENT/);
  });

  it('a decision over the socket goes through the engine and is audited with actor socket', async () => {
    await socket.start();
    const n = h.request([
      ['Docs', 'read'],
      ['Notes', 'write'],
    ]);
    const answer = await askOwner(h.dir, { op: 'command', text: `approve ${n} 1 2h` });
    expect(answer).toMatchObject({
      ok: true,
      granted: [{ request: n, path: 'Docs', mode: 'read' }],
    });
    expect(answer.ok && answer.text).toContain(`Approved request ${n} (1 of 2 items)`);
    expect(h.store.activeGrants().map((g) => g.path)).toEqual(['Docs']);
    const decision = h.records().find((r) => r.event === 'decision');
    expect(decision).toMatchObject({
      actor: SOCKET_ACTOR,
      command: `approve ${n} 1 2h`,
      request: n,
    });
    expect(h.store.getRequest(n)?.decidedBy).toBe('socket');
  });

  it('a refused decision is answered refused, audited, and changes nothing', async () => {
    await socket.start();
    const n = h.request([['Docs', 'read']]);
    await askOwner(h.dir, { op: 'command', text: `deny ${n}` });
    const again = await askOwner(h.dir, { op: 'command', text: `approve ${n}` });
    expect(again).toMatchObject({ ok: true, refused: true });
    expect(h.store.activeGrants()).toEqual([]);
    expect(h.records().at(-1)).toMatchObject({ actor: 'socket', outcome: 'refused' });
  });

  it('grants and status list active grants with expiry, and pending requests', async () => {
    await socket.start();
    const n = h.request([['Docs', 'read']]);
    const m = h.request([['Photos', 'read']]);
    await askOwner(h.dir, { op: 'command', text: `approve ${n} 2h` });
    const grants = await askOwner(h.dir, { op: 'grants' });
    expect(grants).toMatchObject({
      ok: true,
      grants: [{ request: n, path: 'Docs', expires_in_ms: 2 * 3600_000, last_used_at: null }],
    });
    const status = await askOwner(h.dir, { op: 'status' });
    expect(status).toMatchObject({ ok: true, pending: [{ request: m }] });
    expect(status.ok && status.text).toContain('Active grants (1)');
  });

  it('text that is not a command is an error, not a decision', async () => {
    await socket.start();
    const answer = await askOwner(h.dir, { op: 'command', text: 'aprove 1' });
    expect(answer).toMatchObject({ ok: false });
    expect(h.records().filter((r) => r.event === 'decision')).toEqual([]);
  });

  it('no broker running: a clear error naming the data folder and `broker serve`', async () => {
    const err = await askOwner(h.dir, { op: 'grants' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OwnerSocketError);
    expect((err as OwnerSocketError).message).toBe(`no broker is running for data folder ${h.dir}`);
    expect((err as OwnerSocketError).nextStep).toContain('broker serve');
  });

  it("a crashed broker's socket is replaced at start; the client calls it not running before", async () => {
    // A socket file nobody listens on: a hard link outlives the server that made it.
    const other = join(h.dir, 'elsewhere.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(other, r));
    linkSync(other, join(h.dir, OWNER_SOCKET_FILE));
    await new Promise<void>((r) => server.close(() => r()));
    const before = await askOwner(h.dir, { op: 'grants' }).catch((e: unknown) => e);
    expect((before as Error).message).toContain('no broker is running');
    await socket.start();
    expect(await askOwner(h.dir, { op: 'grants' })).toMatchObject({ ok: true, grants: [] });
    expect(logger.lines.join('')).toContain('replaced a stale owner socket');
  });

  it('a live socket is not taken over: the second start is refused', async () => {
    await socket.start();
    const second = ownerSocket();
    await expect(second.start()).rejects.toThrow(/another broker is answering/);
    expect(await askOwner(h.dir, { op: 'grants' })).toMatchObject({ ok: true });
  });

  it('a file that is not a socket is not removed', async () => {
    writeFileSync(join(h.dir, OWNER_SOCKET_FILE), 'mine');
    await expect(socket.start()).rejects.toThrow(/is not a socket/);
  });

  it('attack: a data folder others can enter is refused, by the broker and by the client', async () => {
    await socket.start();
    chmodSync(h.dir, 0o755);
    await expect(askOwner(h.dir, { op: 'grants' })).rejects.toThrow(/mode 0755: other users/);
    await socket.stop();
    const refused = await ownerSocket()
      .start()
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OwnerSocketError);
    expect((refused as OwnerSocketError).nextStep).toBe(`run \`chmod 700 ${h.dir}\``);
    chmodSync(h.dir, 0o700);
  });

  it('attack: a data folder of another user is refused, by the broker and by the client', async () => {
    const stranger = (process.getuid?.() ?? 0) + 4242;
    await expect(ownerSocket({ uid: stranger }).start()).rejects.toThrow(
      /belongs to uid \d+, not to this user/,
    );
    await socket.start();
    await expect(askOwner(h.dir, { op: 'grants' }, { uid: stranger })).rejects.toThrow(
      /not to this user/,
    );
  });
});
