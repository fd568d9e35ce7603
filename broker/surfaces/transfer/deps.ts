import type { TransferService } from '../../transfer/service.js';

/** What the transfer surface's tools may use: the transfer service, never a client. */
export interface TransferToolDeps {
  readonly transfer: TransferService;
}
