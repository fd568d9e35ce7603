/**
 * `broker pair` on the owner socket: the one conversation on it. The broker opens a
 * pairing (pairing/desk.ts), sends its code, then each thing the host should see (a
 * wrong code, the device that sent the right one), reads the owner's one answer, and
 * sends how it ended, then closes. The pairing lives as long as the connection: when
 * `broker pair` goes away (Ctrl-C), its code stops working.
 */
import type { Socket } from 'node:net';
import { iso } from '../../base/time.js';
import type { PairingDesk, PairingDevice, PairingSession, PairingUpdate } from '../pairing/desk.js';
import { PAIR_CODE_VALID_MS } from '../pairing/code.js';
import { NO_PAIRING, NO_PAIRING_NEXT } from './pin-answers.js';
import {
  MAX_REQUEST_BYTES,
  PairAnswerSchema,
  parseLine,
  type DeviceJson,
  type PairLine,
} from './protocol.js';

function deviceJson(d: PairingDevice): DeviceJson {
  return { device_id: d.deviceId, ed25519: d.ed25519, name: d.name ?? null };
}

function lineOf(update: PairingUpdate): PairLine {
  switch (update.stage) {
    case 'wrong_code':
      return { stage: 'wrong_code', device: deviceJson(update.device) };
    case 'claimed':
      return {
        stage: 'claimed',
        device: deviceJson(update.device),
        confirm_by: iso(update.confirmBy),
      };
    case 'ended':
      return {
        stage: 'ended',
        outcome: update.outcome,
        devices: update.devices.map(deviceJson),
        message: update.message ?? null,
      };
  }
}

/**
 * Runs one pairing over `socket` (its request already read; `rest` is what came after
 * that line). Resolves when the pairing has ended.
 */
export async function pairOverSocket(
  socket: Socket,
  rest: string,
  expect: string | undefined,
  desk: Pick<PairingDesk, 'open'> | undefined,
): Promise<void> {
  const send = (line: PairLine): void => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(line)}\n`);
  };
  if (desk === undefined) {
    socket.end(
      `${JSON.stringify({ stage: 'failed', error: NO_PAIRING, next_step: NO_PAIRING_NEXT })}\n`,
    );
    return;
  }
  // The owner takes their time: the pairing's own timers end it.
  socket.setTimeout(0);
  let ended!: () => void;
  const done = new Promise<void>((resolve) => (ended = resolve));
  const opened = await desk.open(expect, (update) => {
    send(lineOf(update));
    if (update.stage === 'ended') {
      socket.end();
      ended();
    }
  });
  if (!opened.ok) {
    const busy: PairLine = {
      stage: 'ended',
      outcome: 'busy',
      devices: [],
      message: opened.message,
    };
    socket.end(`${JSON.stringify(busy)}\n`);
    return;
  }
  const session: PairingSession = opened.session;
  send({
    stage: 'code',
    code: session.code,
    expires_at: iso(session.expiresAt),
    valid_ms: PAIR_CODE_VALID_MS,
    expect: expect ?? null,
  });
  let buffered = rest;
  const onData = (chunk: string): void => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const answer = parseLine(buffered.slice(0, end), PairAnswerSchema);
      buffered = buffered.slice(end + 1);
      // Anything but an answer is no "yes".
      void session.confirm(answer?.pin === true);
    }
    if (buffered.length > MAX_REQUEST_BYTES) void session.confirm(false);
  };
  socket.on('data', onData);
  // Security: the code dies with the command that showed it.
  socket.once('close', () => void session.cancel());
  onData('');
  await done;
}
