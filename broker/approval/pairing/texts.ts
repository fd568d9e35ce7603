/**
 * What the room is told about pairing and pins. A device id is a session's (and the
 * homeserver's) to choose, so it is shown as a code span, escaped like agent text
 * (format.ts). No text here ever holds a pairing code.
 */
import { reply, type Reply } from '../reply.js';
import { groupedKey } from './code.js';
import type { PinChange } from './pins.js';

const session = (deviceId: string) => ['session ', { code: deviceId }] as const;

/** Why a `pair CODE` message pinned nothing (or what it started), for the room. */
export type ClaimOutcome =
  | 'claimed'
  | 'repeated'
  | 'pinned'
  | 'wrong_code'
  | 'no_pairing'
  | 'used'
  | 'expired'
  | 'several_devices'
  | 'not_expected'
  | 'already_pinned'
  | 'failed';

export function claimReply(
  outcome: ClaimOutcome,
  deviceId: string,
  other?: string | undefined,
): Reply | undefined {
  const who = session(deviceId);
  switch (outcome) {
    case 'claimed':
      return reply([
        [
          'A pairing code came from ',
          ...who,
          ': confirm on the broker\'s host, where "broker pair" shows its session key. Nothing is pinned until then.',
        ],
      ]);
    case 'repeated':
      return reply([
        ['The pairing code came again from ', ...who, "; confirm on the broker's host."],
      ]);
    case 'pinned':
      // The pin's own confirmation (pinChangeReply) follows.
      return undefined;
    case 'wrong_code':
      return reply([
        [
          'A pairing code from ',
          ...who,
          ' is not the one "broker pair" shows; nothing was pinned.',
        ],
      ]);
    case 'no_pairing':
      return reply([
        [
          'A pairing code came from ',
          ...who,
          ', but no "broker pair" is waiting on the broker\'s host; nothing was pinned.',
        ],
      ]);
    case 'used':
      return reply([
        [
          'A pairing code that was already used came from ',
          ...who,
          other === undefined ? '; nothing was pinned.' : '; nothing changed. It pinned ',
          ...(other === undefined
            ? []
            : [
                { code: other },
                ': if that is not your device, run "broker unpin ',
                { code: other },
                '" on the broker\'s host.',
              ]),
        ],
      ]);
    case 'expired':
      return reply([
        [
          'The pairing code from ',
          ...who,
          ' has expired; nothing was pinned. Run "broker pair" again.',
        ],
      ]);
    case 'several_devices':
      return reply([
        [
          'Two sessions sent the same pairing code (',
          ...(other === undefined ? [] : [{ code: other }, ' and ']),
          { code: deviceId },
          '), so nothing was pinned: another session of your account can read what you type. Check Settings → Sessions, then run "broker pair" again.',
        ],
      ]);
    case 'not_expected':
      return reply([
        [
          'The pairing code came from ',
          ...who,
          ', but "broker pair --expect" named ',
          ...(other === undefined ? ['another session'] : [{ code: other }]),
          '; nothing was pinned.',
        ],
      ]);
    case 'already_pinned':
      return reply([
        ['The pairing code came from ', ...who, ', which is pinned already; nothing changed.'],
      ]);
    case 'failed':
      return reply([
        ['The pairing of ', ...who, " failed on the broker's host; nothing was pinned."],
      ]);
  }
}

/** The room's confirmation of a pin or an unpin made on the broker's host. */
export function pinChangeReply(change: PinChange): Reply {
  const key = groupedKey(change.pin.ed25519);
  if (change.kind === 'pinned') {
    const how =
      change.confirmed === 'expect'
        ? 'named in advance with "broker pair --expect"'
        : "confirmed on the broker's host";
    return reply([
      [
        'Pinned ',
        ...session(change.pin.deviceId),
        ' (session key ',
        { code: key },
        `), ${how}: its decisions count from now on, and it can read what the bot posts from now on.`,
      ],
    ]);
  }
  return reply([
    [
      'Unpinned ',
      ...session(change.pin.deviceId),
      ' (session key ',
      { code: key },
      ') with "broker unpin" on the broker\'s host: its decisions no longer count, and it gets no further room keys.',
    ],
  ]);
}
