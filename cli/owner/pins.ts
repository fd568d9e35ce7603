/**
 * `broker pins [--json]` and `broker unpin DEVICE_ID [--json]` (docs/contracts.md §6):
 * the approver's pinned Matrix devices on the running broker, and removing one that was
 * paired with `broker pair`. Owner commands like `broker approve` (owner.ts): one request
 * over the owner socket.
 */
import type { Command } from '../command.js';
import { ownerCommand, processOwnerIo, type OwnerIo, type Spec } from './owner.js';

const SPECS: readonly Spec[] = [
  {
    name: 'pins',
    summary: 'the devices whose decisions count in the encrypted room (configured and paired)',
    usage: 'broker pins [--config FILE] [--json]',
    about: `The approver's pinned Matrix devices, one a line: the session ID, the session key in
Element's groups of four, and where the pin comes from (matrix.approver_devices, or
paired with \`broker pair\`, and when). Only these devices get the room's keys, and only
their decisions count. With --json: "pins", each device_id, ed25519, origin ("config" or
"paired") and paired_at.`,
    exits: `Exit codes: 0 done · 1 bad usage or configuration, or no encrypted room (approval:
            console, or matrix.encryption: off) · 2 no broker running, or the owner
            socket is not safe to use`,
    example: 'broker pins',
    min: 0,
    max: 0,
    request: () => ({ op: 'pins' }),
  },
  {
    name: 'unpin',
    summary: 'stop trusting a device paired with broker pair (unpin DEVICE_ID)',
    usage: 'broker unpin DEVICE_ID [--config FILE] [--json]',
    about: `Removes the paired device DEVICE_ID (see \`broker pins\`): from now on its decisions do
not count and it gets no further room keys (the bot starts a new room session). Audited
(a "pin" event) and told in the room. A device pinned in matrix.approver_devices is
removed there instead, with a restart.`,
    exits: `Exit codes: 0 unpinned · 1 bad usage or configuration, or no encrypted room · 2 no
            broker running, or the owner socket is not safe to use · 3 nothing changed
            (not pinned, pinned in the configuration, or the change could not be recorded)`,
    example: 'broker unpin PHONEDEVICE',
    min: 1,
    max: 1,
    request: (p) => ({ op: 'unpin', device: p[0] ?? '' }),
  },
];

export function createPinCommands(io: OwnerIo): Command[] {
  return SPECS.map((spec) => ownerCommand(spec, io));
}

export const pinCommands: readonly Command[] = createPinCommands(processOwnerIo);
