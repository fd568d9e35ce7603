/**
 * `broker pair [--expect DEVICE_ID] [--config FILE]` (docs/contracts.md §6): pins the
 * device the owner decides from in the encrypted approval room, on the running broker,
 * over the owner socket. Prints a one-time code; the owner types `pair CODE` in the room
 * from that device; this command then shows the session ID and key of the device that
 * sent it and pins it only on the owner's "yes" (or at once when `--expect` named it).
 * Text for a person on stdout; the answer is read from stdin.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { DeviceJson, PairAnswer, PairLine } from '../../broker/approval/owner/protocol.js';
import { groupedKey } from '../../broker/approval/pairing/code.js';
import { describeProblem, parseCommandArgs } from '../args.js';
import { type Command, ExitCode } from '../command.js';
import { forTerminal } from '../terminal.js';
import { FINDING, processOwnerIo, type OwnerIo } from './owner.js';
import { ownerDataDir } from './owner-target.js';

export interface PairIo extends OwnerIo {
  /** Where the owner's "yes" comes from (opened only when `broker pair` runs). */
  stdin: () => Readable;
}

const HELP = `Usage: broker pair [--expect DEVICE_ID] [--config FILE]

Pins the device you decide from (your phone, say) in the encrypted approval room,
without copying keys. It prints a one-time code (valid 10 minutes, used once). From that
device, type in the room:

    pair CODE

The broker then shows here the session ID and session key of the device that sent it.
Compare both with Element on your device (Settings → Sessions; Settings → Security &
Privacy → Cryptography) and type "yes" to pin it. Nothing else pins: every session of
your account may read what you type in the room, so the code alone proves nothing. When
two devices send the code, nothing is pinned.

Until it is pinned, your device gets no room keys, so it shows the bot's messages as
"Unable to decrypt". That is expected: type "pair CODE" from it anyway.

${FINDING}

Options:
  --expect DEVICE_ID   pin that device as soon as it sends the code, without asking (for
                       scripts); any other device sending it ends the pairing
  --config FILE        the broker's configuration (see above)

Exit codes: 0 pinned · 1 bad usage or configuration, or no encrypted room · 2 no broker
            running, or the owner socket is not safe to use · 3 nothing pinned (refused
            at the prompt, two devices sent the code, --expect named another, the code
            expired, the device is pinned already, or another broker pair is running)

Example:
  broker pair`;

function deviceLines(d: DeviceJson): string {
  const name =
    d.name === null || d.name === ''
      ? ''
      : `  Name it gives itself: "${forTerminal(d.name.slice(0, 80))}" (any session can choose any name)\n`;
  return `  Session ID:   ${forTerminal(d.device_id)}\n  Session key:  ${forTerminal(groupedKey(d.ed25519))}\n${name}`;
}

const ids = (devices: readonly DeviceJson[]): string =>
  devices.map((d) => forTerminal(d.device_id)).join(', ');

/** What the owner reads when the pairing has ended; exit 0 only for a pin. */
function endText(line: Extract<PairLine, { stage: 'ended' }>): string {
  const device = line.devices[0];
  const who = device === undefined ? 'the device' : `session ${forTerminal(device.device_id)}`;
  switch (line.outcome) {
    case 'pinned':
      return `Pinned ${who}: its decisions count from now on, and it receives the room's keys from now on (it cannot read what came before). The room has been told.`;
    case 'declined':
      return 'Nothing pinned: you did not confirm. The code no longer works; run broker pair again.';
    case 'several_devices':
      return `Nothing pinned: two sessions sent the code (${ids(line.devices)}). Another session of your account can read what you type in the room: check Settings → Sessions in Element and sign out any you do not know, then run broker pair again.`;
    case 'not_expected':
      return `Nothing pinned: ${who} sent the code, but --expect named another device. The code no longer works.`;
    case 'already_pinned':
      return `${who} is pinned already; nothing changed (broker pins lists the pins).`;
    case 'expired':
      return 'Nothing pinned: the code expired (10 minutes), or the confirmation came too late. Run broker pair again.';
    case 'cancelled':
      return 'Nothing pinned: the pairing was cancelled.';
    case 'failed':
      return `Nothing pinned: ${forTerminal(line.message ?? 'the pin could not be saved')}.`;
    case 'busy':
      return `Nothing pinned: ${forTerminal(line.message ?? 'another broker pair is running')}.`;
  }
}

/** Lines of stdin, one per question; `cancel` answers a waiting question with nothing. */
function answers(input: Readable): {
  next(): Promise<string | undefined>;
  cancel(): void;
  close(): void;
} {
  const rl = createInterface({ input, terminal: false, crlfDelay: Infinity });
  const lines: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  let closed = false;
  const give = (line: string | undefined): void => {
    const w = waiting;
    waiting = undefined;
    w?.(line);
  };
  rl.on('line', (line) => (waiting === undefined ? lines.push(line) : give(line)));
  rl.on('close', () => {
    closed = true;
    give(undefined);
  });
  return {
    next: () =>
      new Promise((resolve) => {
        if (lines.length > 0) resolve(lines.shift());
        else if (closed) resolve(undefined);
        else waiting = resolve;
      }),
    cancel: () => give(undefined),
    close: () => rl.close(),
  };
}

export function createPairCommand(io: PairIo): Command {
  const fail = (code: number, error: string, nextStep: string): number => {
    io.stderr(`broker pair: ${forTerminal(error)}\n  next: ${forTerminal(nextStep)}\n`);
    return code;
  };
  /** Each line the broker sends: shown, and the owner's answer to a claimed device. */
  const onLine = async (
    line: PairLine,
    typed: ReturnType<typeof answers>,
  ): Promise<PairAnswer | undefined> => {
    switch (line.stage) {
      case 'code':
        io.stdout(codeText(line));
        return undefined;
      case 'wrong_code':
        io.stdout(
          `Session ${forTerminal(line.device.device_id)} sent a code that is not this one (mistyped?); still waiting.\n`,
        );
        return undefined;
      case 'claimed': {
        io.stdout(
          `\nSession ${forTerminal(line.device.device_id)} sent the code:\n${deviceLines(line.device)}\nCompare both with Element on the device you typed the code on: Settings → Sessions\n(Session ID) and Settings → Security & Privacy → Cryptography (Session key).\nPin it only if both match: another session of your account may have sent the code.\nPin this session? Type yes to pin it, anything else to refuse: `,
        );
        const answer = await typed.next();
        return { op: 'confirm', pin: answer?.trim().toLowerCase() === 'yes' };
      }
      case 'ended':
      case 'failed':
        // A question still waiting has no answer to give any more.
        typed.cancel();
        return undefined;
    }
  };
  return {
    name: 'pair',
    summary: 'pin the device you decide from in the encrypted room (one-time code)',
    help: HELP,
    async run(args) {
      const parsed = parseCommandArgs(
        args,
        { config: { type: 'string' }, expect: { type: 'string' } },
        false,
      );
      if (!parsed.ok) {
        const error = describeProblem(parsed.problem, `${parsed.problem.arg} needs a value`);
        return fail(ExitCode.usage, error, 'run `broker pair --help`');
      }
      const { config, expect } = parsed.values;
      const found = await ownerDataDir(
        io.cwd(),
        io.env,
        typeof config === 'string' ? config : undefined,
      );
      if (!found.ok) return fail(ExitCode.usage, found.error, 'run `broker pair --help`');
      const { pairOwner } = await import('../../broker/approval/owner/client.js');
      const { OwnerSocketError } = await import('../../broker/approval/owner/safety.js');
      const typed = answers(io.stdin());
      let last: PairLine;
      try {
        last = await pairOwner(found.dir, typeof expect === 'string' ? expect : undefined, (line) =>
          onLine(line, typed),
        );
      } catch (err) {
        if (err instanceof OwnerSocketError) {
          return fail(ExitCode.infrastructure, err.message, err.nextStep);
        }
        throw err;
      } finally {
        typed.close();
      }
      if (last.stage === 'failed') return fail(ExitCode.usage, last.error, last.next_step);
      if (last.stage !== 'ended') {
        return fail(
          ExitCode.infrastructure,
          'the broker ended the pairing without a word',
          'see the broker log',
        );
      }
      io.stdout(`\n${endText(last)}\n`);
      return last.outcome === 'pinned' ? ExitCode.ok : ExitCode.refused;
    },
  };
}

function codeText(line: Extract<PairLine, { stage: 'code' }>): string {
  const expecting =
    line.expect === null
      ? ''
      : `Only session ${forTerminal(line.expect)} can be pinned with it (--expect); it is pinned as soon as it sends the code.\n`;
  return `Pairing code: ${forTerminal(line.code)}   (valid 10 minutes, used once)

From the device you want to pin, type in the approval room:

    pair ${forTerminal(line.code)}

That device cannot read the room yet: an unpinned device gets no room keys, so it shows
the bot's messages as "Unable to decrypt". That is expected; type the line anyway.
${expecting}Waiting for it… (Ctrl-C cancels; the code then stops working)
`;
}

export const pairCommand: Command = createPairCommand({
  ...processOwnerIo,
  stdin: () => process.stdin,
});
