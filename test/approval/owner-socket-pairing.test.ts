/**
 * The owner socket's pairing side (docs/contracts.md §6): `pins`, `unpin`, and `broker
 * pair`'s conversation, on a real socket with the real desk, pins, engine and audit log;
 * what a device sends is played through the desk's `claim` (the Matrix side is
 * matrix-pairing*.test.ts). And a decision made over the socket shown where the owner
 * watches.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { askOwner, pairOwner } from '../../broker/approval/owner/client.js';
import { OWNER_SOCKET_FILE, type PairLine } from '../../broker/approval/owner/protocol.js';
import { OwnerSocket } from '../../broker/approval/owner/server.js';
import { createPairing, type Pairing } from '../../broker/approval/pairing/index.js';
import { memoryLogger } from '../../broker/base/log.js';
import { harness, LIFECYCLE, type Harness } from '../../support/approval.js';
import { manualTimers } from '../../support/manual-timers.js';
import { until } from '../../support/until.js';

const KEY = 'p'.repeat(43);
const PHONE = { deviceId: 'PHONEDEVICE', ed25519: KEY, name: 'Pixel' };
const LAPTOP = { deviceId: 'LAPTOPDEVICE', ed25519: 'l'.repeat(43) };

let h: Harness;
let dataDir: string;
let pairing: Pairing | undefined;
let socket: OwnerSocket;
const shown: string[] = [];

function start(withPairing: boolean): Promise<void> {
  pairing = withPairing
    ? createPairing(
        {
          approval: 'matrix',
          data_dir: dataDir,
          matrix: {
            homeserver: 'https://hs.test',
            bot_user: '@bot:hs.test',
            bot_token: 'unused-token-0123456789',
            room_id: '!r:hs.test',
            approver: '@owner:hs.test',
            encryption: 'required',
            approver_devices: [{ deviceId: 'OLDPHONE', ed25519: 'o'.repeat(43) }],
          },
        },
        {
          audit: h.audit,
          now: () => h.clock.now,
          logger: h.logger,
          randomBytes: (n) => new Uint8Array(n).fill(7),
          timers: manualTimers(),
        },
      )
    : undefined;
  socket = new OwnerSocket({
    dir: h.dir,
    engine: h.engine,
    store: h.store,
    now: () => h.clock.now,
    pendingTimeout: LIFECYCLE.pending_timeout,
    logger: memoryLogger(),
    show: async (text) => void shown.push(text),
    pins: pairing?.pins,
    pairing: pairing?.desk,
  });
  return socket.start();
}

beforeEach(async () => {
  h = await harness({ channel: 'console' });
  dataDir = mkdtempSync(join(tmpdir(), 'owner-pairing-'));
  shown.length = 0;
});
afterEach(async () => {
  await socket.stop();
  await h.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** `broker pair` as the CLI holds it: answers `pin` to a claimed device. */
function pair(pin: boolean, expect?: string) {
  const lines: PairLine[] = [];
  const done = pairOwner(h.dir, expect, async (line) => {
    lines.push(line);
    return line.stage === 'claimed' ? { op: 'confirm', pin } : undefined;
  });
  return { lines, done };
}

async function codeOf(lines: PairLine[]): Promise<string> {
  await until('the code', () => lines.some((l) => l.stage === 'code'));
  const line = lines.find((l) => l.stage === 'code');
  if (line?.stage !== 'code') throw new Error('unreachable');
  return line.code;
}

describe('pins and unpin over the socket', () => {
  it('list the configured and the paired devices; unpin removes a paired one only', async () => {
    await start(true);
    const { lines, done } = pair(true);
    await pairing?.desk.claim(await codeOf(lines), PHONE, '$1');
    expect(await done).toMatchObject({ stage: 'ended', outcome: 'pinned' });
    expect(await askOwner(h.dir, { op: 'pins' })).toMatchObject({
      ok: true,
      pins: [
        { device_id: 'OLDPHONE', origin: 'config', paired_at: null },
        { device_id: 'PHONEDEVICE', ed25519: KEY, origin: 'paired', paired_at: expect.any(String) },
      ],
    });
    expect(await askOwner(h.dir, { op: 'unpin', device: 'OLDPHONE' })).toMatchObject({
      ok: true,
      refused: true,
      text: expect.stringContaining('matrix.approver_devices'),
    });
    expect(await askOwner(h.dir, { op: 'unpin', device: 'PHONEDEVICE' })).toMatchObject({
      ok: true,
      unpinned: { device_id: 'PHONEDEVICE' },
    });
    expect(pairing?.pins.source().map((p) => p.deviceId)).toEqual(['OLDPHONE']);
  });

  it('without an encrypted room: an error naming what pins are for', async () => {
    await start(false);
    expect(await askOwner(h.dir, { op: 'pins' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('encrypted approval room'),
    });
    const { done } = pair(true);
    expect(await done).toMatchObject({ stage: 'failed' });
  });
});

describe('broker pair over the socket', () => {
  it('shows the claimed device, and pins it on the answer "yes"', async () => {
    await start(true);
    const { lines, done } = pair(true);
    await pairing?.desk.claim(await codeOf(lines), PHONE, '$1');
    await done;
    expect(lines.map((l) => l.stage)).toEqual(['code', 'claimed', 'ended']);
    expect(lines[1]).toMatchObject({
      device: { device_id: 'PHONEDEVICE', ed25519: KEY, name: 'Pixel' },
    });
  });

  it('"no": nothing pinned', async () => {
    await start(true);
    const { lines, done } = pair(false);
    await pairing?.desk.claim(await codeOf(lines), PHONE, '$1');
    expect(await done).toMatchObject({ outcome: 'declined' });
    expect(pairing?.pins.source().map((p) => p.deviceId)).toEqual(['OLDPHONE']);
  });

  it('a second broker pair while one waits: busy', async () => {
    await start(true);
    const first = pair(true);
    // It ends when the socket stops, after the test.
    first.done.catch(() => undefined);
    await codeOf(first.lines);
    expect(await pair(true).done).toMatchObject({ stage: 'ended', outcome: 'busy' });
  });

  it('attack: the command goes away (Ctrl-C): its code stops working at once', async () => {
    await start(true);
    const conn = connect(join(h.dir, OWNER_SOCKET_FILE));
    conn.setEncoding('utf8');
    let got = '';
    conn.on('data', (chunk: string) => (got += chunk));
    conn.write(`${JSON.stringify({ op: 'pair' })}\n`);
    await until('the code line', () => got.includes('\n'));
    const code = (JSON.parse(got.split('\n')[0] ?? '') as { code: string }).code;
    conn.destroy();
    await until('the pairing ended', () =>
      h.records().some((r) => r.event === 'pin' && r['outcome'] === 'cancelled'),
    );
    expect((await pairing?.desk.claim(code, PHONE, '$1'))?.outcome).toBe('used');
    expect(pairing?.pins.source().map((p) => p.deviceId)).toEqual(['OLDPHONE']);
  });

  it('a device the owner did not expect ends it (--expect)', async () => {
    await start(true);
    const { lines, done } = pair(true, 'PHONEDEVICE');
    await pairing?.desk.claim(await codeOf(lines), LAPTOP, '$1');
    expect(await done).toMatchObject({ outcome: 'not_expected' });
  });
});

describe("a decision from the owner's shell is shown where the owner watches", () => {
  it('approve, deny and revoke are shown naming the shell; status is not', async () => {
    await start(false);
    const n = h.request([['Docs', 'read']]);
    const m = h.request([['Photos', 'read']]);
    await askOwner(h.dir, { op: 'command', text: `approve ${n} 2h` });
    await askOwner(h.dir, { op: 'command', text: `deny ${m}` });
    await askOwner(h.dir, { op: 'command', text: `deny ${m}` });
    await askOwner(h.dir, { op: 'command', text: 'status' });
    await askOwner(h.dir, { op: 'command', text: 'revoke all' });
    await until('all shown', () => shown.length === 4);
    expect(shown.map((t) => t.split('\n')[0])).toEqual([
      `From a shell on the broker's host (owner socket): broker approve ${n} 2h`,
      `From a shell on the broker's host (owner socket): broker deny ${m}`,
      `From a shell on the broker's host (owner socket): broker deny ${m}`,
      "From a shell on the broker's host (owner socket): broker revoke all",
    ]);
    expect(shown[0]).toContain(`Approved request ${n}`);
    expect(shown[2]).toContain('already decided');
  });
});
