/**
 * The approver's revokes: a request, an instance, or everything. Revoking only narrows
 * access, so it stands even when its audit line cannot be written (the answer says
 * so); a refusal (no such request or instance) changes nothing and is audited.
 */
import type { GrantRecord } from '../base/domain.js';
import type { RevokeTarget } from './command.js';
import type { Decisions } from './decisions.js';
import { grantLines, plural, type Line } from './format.js';
import type { ApprovalStore } from './ports.js';
import { reply, say, type Reply } from './reply.js';

export interface RevocationDeps {
  readonly store: ApprovalStore;
  readonly instances: { has(name: string): boolean; keys(): Iterable<string> };
  /** Where each revoke is audited and its follow-up (locks, transfers) run. */
  readonly decisions: Pick<Decisions, 'record' | 'notifyRevoked'>;
}

export class Revocations {
  readonly #deps: RevocationDeps;

  constructor(deps: RevocationDeps) {
    this.#deps = deps;
  }

  async revoke(target: RevokeTarget, actor: string, cause: string): Promise<Reply> {
    let revoked: GrantRecord[];
    let what: string;
    let nothingRevoked: string | undefined;
    if (target === 'all') {
      revoked = this.#deps.store.revokeAll();
      what = 'all grants';
    } else if ('request' in target) {
      const request = this.#deps.store.getRequest(target.request);
      if (request === undefined) {
        await this.#deps.decisions.record({
          event: 'revoke',
          actor,
          cause,
          target: { request: target.request },
          outcome: 'refused',
          code: 'unknown_request',
        });
        return { ...say(`There is no request ${target.request}; nothing changed.`), refused: true };
      }
      revoked = this.#deps.store.revokeRequest(target.request);
      what = `request ${target.request}`;
      // A pending request has nothing to revoke, and still waits: say how to refuse it.
      if (request.state === 'pending') {
        nothingRevoked = `Request ${target.request} is still pending: nothing is granted yet, so nothing was revoked. Type "deny ${target.request}" to refuse it.`;
      }
    } else {
      if (!this.#deps.instances.has(target.instance)) {
        await this.#deps.decisions.record({
          event: 'revoke',
          actor,
          cause,
          target,
          outcome: 'refused',
          code: 'unknown_instance',
        });
        const known = [...this.#deps.instances.keys()].join(', ');
        return {
          ...say(`There is no instance "${target.instance}" (known: ${known}); nothing changed.`),
          refused: true,
        };
      }
      revoked = this.#deps.store.revokeInstance(target.instance);
      what = `instance ${target.instance}`;
    }
    // Revoking only narrows access, so it stands even if the audit line fails.
    const recorded = await this.#deps.decisions.record({
      event: 'revoke',
      actor,
      cause,
      target,
      outcome: 'revoked',
      grants: revoked.map((g) => g.id),
    });
    const followedUp = await this.#deps.decisions.notifyRevoked(revoked);
    const lines: Line[] =
      revoked.length === 0
        ? [[nothingRevoked ?? `No active grants for ${what}; nothing to revoke.`]]
        : [
            [
              cause === 'approval_withdrawn'
                ? `Approval of ${what} withdrawn: revoked ${plural(revoked.length, 'grant')}:`
                : `Revoked ${plural(revoked.length, 'grant')} (${what}):`,
            ],
            ...grantLines(revoked),
          ];
    if (!recorded) lines.push(['(The audit log could not record this revoke.)']);
    if (!followedUp) lines.push(['(Releasing locks or transfers failed; see the broker log.)']);
    return reply(lines, { revoked });
  }
}
