/**
 * The owner's read-only answers: `status` (status.ts) and `show N` (show-message.ts).
 * Nothing here changes a grant or a request, so nothing here is audited.
 */
import type { Clock } from '../base/domain.js';
import { pendingTooLong } from './decisions.js';
import type { ApprovalStore } from './ports.js';
import { say, type Reply } from './reply.js';
import { renderShow } from './show-message.js';
import { renderStatus } from './status.js';

export interface ViewDeps {
  readonly store: ApprovalStore;
  readonly now: Clock;
  readonly lifecycle: { readonly pending_timeout: number };
  /** A line `status` ends with (the clear-text room warning), if any. */
  readonly notice?: string;
}

/** What `status` says in a Matrix room with `matrix.encryption: off`. */
export const CLEAR_TEXT_NOTICE =
  "⚠ This room is not end-to-end encrypted (matrix.encryption: off): a decision here is only as trustworthy as the homeserver and every session of the approver's account. Set matrix.encryption: required and pin your devices (see the user guide).";

export class Views {
  readonly #deps: ViewDeps;

  constructor(deps: ViewDeps) {
    this.#deps = deps;
  }

  status(): Reply {
    const now = this.#deps.now();
    const timeout = this.#deps.lifecycle.pending_timeout;
    const pending = this.#deps.store
      .pendingRequests?.()
      .filter((r) => !pendingTooLong(r, now, timeout));
    const r = renderStatus({
      grants: this.#deps.store.activeGrants(),
      pending,
      now,
      pendingTimeout: timeout,
      locks: this.#deps.store.openCheckoutLocks?.(),
      notice: this.#deps.notice,
    });
    return { text: r.plain, html: r.html };
  }

  /** `show N`: the request in full, in as many messages as it needs. */
  show(n: number): Reply {
    const request = this.#deps.store.getRequest(n);
    if (request === undefined) {
      // Refused, as an unknown request is for the other commands: `broker show 99` exits 3.
      return {
        ...say(`There is no request ${n}. Type "status" to see the pending requests.`),
        refused: true,
      };
    }
    const [first, ...rest] = renderShow(request, {
      now: this.#deps.now(),
      pendingTimeout: this.#deps.lifecycle.pending_timeout,
    });
    return {
      text: first?.plain ?? '',
      html: first?.html ?? '',
      ...(rest.length === 0 ? {} : { continued: rest }),
    };
  }
}
