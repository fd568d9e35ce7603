/** A command of the approver's, however it arrived (typed in parser.ts, a reaction in emoji.ts). */

export type RevokeTarget = { request: number } | { instance: string } | 'all';

export type Command =
  | { kind: 'approve'; request: number; items?: number[]; durationMs?: number }
  | { kind: 'deny'; request: number }
  /** Denies every pending request (a flood of them, say). */
  | { kind: 'deny_all' }
  | { kind: 'revoke'; target: RevokeTarget }
  /** Request N in full: reason, every item with its state. */
  | { kind: 'show'; request: number }
  | { kind: 'status' }
  | { kind: 'help' }
  /**
   * Takes back what operation SEQ (its audit line), or every operation under the grants
   * of request N, changed (operations/undo/); with `dryRun`, only says what it would do.
   */
  | { kind: 'undo'; target: { seq: number } | { request: number }; dryRun: boolean };
