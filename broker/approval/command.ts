/** A command of the approver's, however it arrived (typed in parser.ts, a reaction in emoji.ts). */

export type RevokeTarget = { request: number } | { instance: string } | 'all';

export type Command =
  | { kind: 'approve'; request: number; items?: number[]; durationMs?: number }
  | { kind: 'deny'; request: number }
  | { kind: 'revoke'; target: RevokeTarget }
  | { kind: 'status' }
  | { kind: 'help' };
