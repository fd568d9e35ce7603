/**
 * One soak agent: a persistent agent-surface client and a transfer-surface client,
 * working only under its own folder inside each granted folder (`Soak/G<k>/a<agent>`),
 * one operation at a time, so every Nextcloud request maps to exactly one intent line.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getBlob, putBlob } from '../../support/blobs.js';
import { callTool, type Envelope } from '../../support/mcp.js';

export type OpKind = 'list' | 'mkdir' | 'move' | 'trash' | 'write' | 'read' | 'checkout';
export const OP_KINDS: readonly OpKind[] = [
  'list',
  'mkdir',
  'move',
  'trash',
  'write',
  'read',
  'checkout',
];

export interface Tally {
  ops: Record<OpKind, number>;
  statuses: Map<string, number>;
  http5xx: string[];
  errors: string[];
  /** Reads whose bytes or sha256 did not match what was written. */
  corrupt: string[];
  /**
   * Uploads answered with something other than ok (refused, failed, cut) whose bytes
   * Nextcloud nevertheless holds: the answer hides that the file changed. Must be none.
   */
  storedDespiteAnswer: string[];
  /** Uploads answered ok whose bytes Nextcloud does not hold at the end. Must be none. */
  missingDespiteOk: string[];
}

export function newTally(): Tally {
  return {
    ops: { list: 0, mkdir: 0, move: 0, trash: 0, write: 0, read: 0, checkout: 0 },
    statuses: new Map(),
    http5xx: [],
    errors: [],
    corrupt: [],
    storedDespiteAnswer: [],
    missingDespiteOk: [],
  };
}

function count(t: Tally, op: string, env: Envelope): void {
  const key = `${op}:${env.status}${env.code ? `:${env.code}` : ''}`;
  t.statuses.set(key, (t.statuses.get(key) ?? 0) + 1);
  if (env.status === 'error') t.errors.push(`${op}: ${JSON.stringify(env).slice(0, 300)}`);
}

export interface AgentDeps {
  id: number;
  agent: Client;
  transfer: Client;
  brokerUrl: string;
  transferToken: string;
  folders: number;
  rand: () => number;
  tally: Tally;
}

function answerOf(put: { status: number; json: Record<string, unknown> }): string {
  return put.status === 0
    ? `cut (${String(put.json.cut)})`
    : `${String(put.json.status ?? put.status)}${typeof put.json.code === 'string' ? `/${put.json.code}` : ''}`;
}

/** Files this agent wrote and still believes exist, with their content. */
type Files = Map<string, Buffer>;

export class SoakAgent {
  /** Files this agent wrote, answered ok, and still believes exist, with their content. */
  readonly files: Files = new Map();
  /** Uploads not answered ok: the bytes and the answer, until the path is read or written. */
  readonly unconfirmed = new Map<string, { body: Buffer; answer: string }>();
  #n = 0;

  readonly #d: AgentDeps;

  constructor(d: AgentDeps) {
    this.#d = d;
  }

  #base(k: number): string {
    return `Soak/G${k}/a${this.#d.id}`;
  }

  #pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.#d.rand() * xs.length)] as T;
  }

  async #call(client: Client, tool: string, args: Record<string, unknown>): Promise<Envelope> {
    try {
      return await callTool(client, tool, args);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const text = `${tool}: ${error instanceof Error ? error.message : String(error)}`;
      if (typeof code === 'number' && code >= 500) this.#d.tally.http5xx.push(text);
      else this.#d.tally.errors.push(text);
      return { status: 'transport_error' };
    }
  }

  /** One operation, chosen at random; resolves when it has been answered. */
  async step(): Promise<void> {
    const k = Math.floor(this.#d.rand() * this.#d.folders);
    const mine = [...this.files.keys()].filter((p) => p.startsWith(`${this.#base(k)}/`));
    let op = this.#pick(OP_KINDS);
    if (op !== 'list' && op !== 'mkdir' && op !== 'write' && mine.length === 0) op = 'write';
    this.#d.tally.ops[op] += 1;
    this.#n += 1;
    const t = this.#d.tally;
    const instance = 'personal';
    switch (op) {
      case 'list': {
        count(t, op, await this.#call(this.#d.agent, 'list', { instance, path: this.#base(k) }));
        return;
      }
      case 'mkdir': {
        const path = `${this.#base(k)}/d${this.#n}`;
        count(t, op, await this.#call(this.#d.agent, 'mkdir', { instance, path }));
        return;
      }
      case 'move': {
        const from = this.#pick(mine);
        const to = `${this.#base(k)}/m${this.#n}.txt`;
        const env = await this.#call(this.#d.agent, 'move', { instance, from, to });
        count(t, op, env);
        if (env.status === 'ok') {
          this.files.set(to, this.files.get(from) ?? Buffer.alloc(0));
          this.files.delete(from);
          const attempt = this.unconfirmed.get(from);
          this.unconfirmed.delete(from);
          if (attempt !== undefined) this.unconfirmed.set(to, attempt);
        }
        return;
      }
      case 'trash': {
        const path = this.#pick(mine);
        const env = await this.#call(this.#d.agent, 'trash', { instance, path });
        count(t, op, env);
        if (env.status === 'ok') {
          this.files.delete(path);
          this.unconfirmed.delete(path);
        }
        return;
      }
      case 'write': {
        const path = `${this.#base(k)}/f${this.#n}.txt`;
        const body = Buffer.from(`agent ${this.#d.id} op ${this.#n}\n`.repeat(1 + (this.#n % 64)));
        const env = await this.#call(this.#d.transfer, 'write', {
          instance,
          path,
          size: body.length,
          if_none_match: '*',
        });
        count(t, 'write-ticket', env);
        if (env.status !== 'ok') return;
        const put = await putBlob(
          this.#d.brokerUrl,
          String(env.blob_url),
          this.#d.transferToken,
          body,
        );
        if (put.status >= 500)
          this.#d.tally.http5xx.push(`PUT blob ${path}: ${put.status} ${JSON.stringify(put.json)}`);
        count(t, 'write-blob', {
          status: put.status === 0 ? 'cut' : String(put.json.status ?? put.status),
          ...(typeof put.json.code === 'string' ? { code: put.json.code } : {}),
        });
        if (put.status === 200) this.files.set(path, body);
        else this.unconfirmed.set(path, { body, answer: answerOf(put) });
        return;
      }
      case 'checkout': {
        // Lock + read, then check in new content under the lock (or give the lock back).
        const path = this.#pick(mine);
        const out = await this.#call(this.#d.transfer, 'checkout', { instance, path });
        count(t, 'checkout', out);
        if (out.status !== 'ok') return;
        const lock = String(out.lock_token);
        const got = await getBlob(this.#d.brokerUrl, String(out.blob_url), this.#d.transferToken);
        const body = Buffer.from(`checked in by agent ${this.#d.id} at op ${this.#n}\n`);
        const ticket =
          got.status === 200 && got.complete
            ? await this.#call(this.#d.transfer, 'checkin', {
                instance,
                path,
                lock_token: lock,
                size: body.length,
              })
            : ({ status: 'skipped' } as Envelope);
        count(t, 'checkin-ticket', ticket);
        if (ticket.status === 'ok') {
          const put = await putBlob(
            this.#d.brokerUrl,
            String(ticket.blob_url),
            this.#d.transferToken,
            body,
          );
          if (put.status >= 500) this.#d.tally.http5xx.push(`checkin PUT ${path}: ${put.status}`);
          count(t, 'checkin-blob', {
            status: put.status === 0 ? 'cut' : String(put.json.status ?? put.status),
            ...(typeof put.json.code === 'string' ? { code: put.json.code } : {}),
          });
          if (put.status === 200) {
            this.files.set(path, body);
            this.unconfirmed.delete(path);
            return;
          }
          this.unconfirmed.set(path, { body, answer: answerOf(put) });
        }
        // Not checked in: give the lock back (refused if the grant already ended, in
        // which case the broker released it itself).
        count(
          t,
          'checkin-abandon',
          await this.#call(this.#d.transfer, 'checkin', {
            instance,
            path,
            lock_token: lock,
            abandon: true,
          }),
        );
        return;
      }
      case 'read': {
        const path = this.#pick(mine);
        const env = await this.#call(this.#d.transfer, 'read', { instance, path });
        count(t, 'read-ticket', env);
        if (env.status !== 'ok') return;
        const got = await getBlob(this.#d.brokerUrl, String(env.blob_url), this.#d.transferToken);
        if (got.status >= 500) this.#d.tally.http5xx.push(`GET blob ${path}: ${got.status}`);
        const key = `read-blob:${got.status === 0 ? 'cut' : got.status}${got.status !== 0 && !got.complete ? ':cut' : ''}`;
        t.statuses.set(key, (t.statuses.get(key) ?? 0) + 1);
        if (got.status === 200 && got.complete) {
          const expected = this.files.get(path);
          const attempt = this.unconfirmed.get(path);
          this.unconfirmed.delete(path);
          if (attempt !== undefined && expected !== undefined && !expected.equals(got.body)) {
            if (attempt.body.equals(got.body)) {
              this.#d.tally.storedDespiteAnswer.push(`${path} (answered ${attempt.answer})`);
              this.files.set(path, got.body);
              return;
            }
          }
          const sha = createHash('sha256').update(got.body).digest('hex');
          if (expected !== undefined && !expected.equals(got.body))
            this.#d.tally.corrupt.push(
              `${path}: ${got.body.length} bytes differ from what was written`,
            );
          if (got.trailers['x-broker-sha256'] !== sha)
            this.#d.tally.corrupt.push(`${path}: trailer sha256 does not match the bytes`);
        }
        return;
      }
    }
  }
}
