/** The transfer surface (`POST /transfer`), spoken by the `broker` CLI: these six tools only. */
import { ToolRegistry } from '../tool.js';
import { registerTransferCheckAccess } from './check-access.js';
import { registerCheckin } from './checkin.js';
import { registerCheckout } from './checkout.js';
import type { TransferToolDeps } from './deps.js';
import { registerTransferList } from './list.js';
import { registerRead } from './read.js';
import { registerWrite } from './write.js';

export type { TransferToolDeps } from './deps.js';

export const TRANSFER_INSTRUCTIONS =
  'Content transfer for the broker CLI. Tools answer single-use tickets; bytes stream over ' +
  'GET/PUT /transfer/blobs/<ticket> with the transfer token.';

export function transferTools(deps: TransferToolDeps): ToolRegistry {
  const registry = new ToolRegistry();
  registerTransferCheckAccess(registry, deps);
  registerTransferList(registry, deps);
  registerRead(registry, deps);
  registerWrite(registry, deps);
  registerCheckout(registry, deps);
  registerCheckin(registry, deps);
  return registry;
}
