import type { FileOperations } from '../../operations/files.js';
import type { TransferService } from '../../operations/transfer.js';

/** What the transfer surface's tools may use: the transfer service and listings, never a client. */
export interface TransferToolDeps {
  readonly transfer: TransferService;
  /** For `list` (the CLI's `fetch --recursive`). */
  readonly files: FileOperations;
}
