import type { TransferService } from '../../operations/transfer.js';

/** What the transfer surface's tools may use: the transfer service, never a client. */
export interface TransferToolDeps {
  readonly transfer: TransferService;
}
