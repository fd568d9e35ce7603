/**
 * A pending `request_access` as an MCP task, for clients that ask for one: the task is
 * `working` while the owner has not decided and `completed` once the request is approved,
 * partially approved, denied or expired; its result is then what `check_access` answers
 * for the request. So a client shows "waiting for the owner" natively instead of polling
 * `check_access`, and no tool call is ever held open waiting for a human.
 *
 * A task holds no state of its own: its id names the request (`request-42`) and every
 * `tasks/get` reads the request's current state, so tasks survive a broker restart like
 * the request records do (a request pending at a restart is discarded, which completes
 * its task).
 */
import type { Envelope } from '../base/envelope.js';
import { toToolResult, type ToolCore, type ToolResult } from './mcp-tools.js';
import type { JsonObject } from '../base/protocol.js';

/** The Tasks extension's identifier (MCP 2026-07-28, SEP-2663). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** How often a client should poll: owner decisions take minutes, not milliseconds. */
export const TASK_POLL_INTERVAL_MS = 5_000;
/**
 * How long a task stays readable. A task lives as long as its request record, which the
 * broker keeps; the number only has to outlast an undecided request's life (12 h by
 * default) and the time a client takes to read the outcome.
 */
export const TASK_TTL_MS = 86_400_000;

/** When a request was made and when it last changed (epoch ms). */
export interface RequestTimes {
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface TaskView {
  readonly taskId: string;
  readonly status: 'working' | 'completed';
  /** The task's fields on the wire of 2026-07-28 (ttlMs, pollIntervalMs). */
  modern(): JsonObject;
  /** A completed task's result (the check_access answer); nothing while working. */
  outcome(): { result?: ToolResult };
}

export interface PendingTasks {
  /** The task for a tool's answer, when it is a pending request; undefined otherwise. */
  created(tool: string, envelope: Envelope): Promise<TaskView | undefined>;
  /** The task's current view; undefined for an id that names no request. */
  get(taskId: string): Promise<TaskView | undefined>;
}

const TASK_ID = /^request-([1-9][0-9]{0,11})$/;

/**
 * Tasks on a surface that has `request_access` and `check_access`. `times` reads a
 * request's record (undefined when there is none).
 */
export function pendingTasks(
  core: ToolCore,
  times: (request: number) => RequestTimes | undefined,
): PendingTasks | undefined {
  const names = new Set(core.listing.map((t) => t.name));
  if (!names.has('request_access') || !names.has('check_access')) return undefined;

  const view = (request: number, at: RequestTimes, envelope: Envelope): TaskView => {
    const status = envelope.status === 'pending' ? 'working' : 'completed';
    const fields = {
      taskId: `request-${request}`,
      status,
      // A client polling the task needs no advice to call check_access (the envelope's
      // message is written for one that does not use tasks).
      statusMessage:
        status === 'working'
          ? `request #${request} is waiting for the owner's decision`
          : envelope.message,
      createdAt: new Date(at.createdAt).toISOString(),
      lastUpdatedAt: new Date(at.updatedAt).toISOString(),
    };
    return {
      taskId: fields.taskId,
      status,
      modern: () => ({ ...fields, ttlMs: TASK_TTL_MS, pollIntervalMs: TASK_POLL_INTERVAL_MS }),
      outcome: () => (status === 'completed' ? { result: toToolResult(envelope) } : {}),
    };
  };

  const get = async (taskId: string): Promise<TaskView | undefined> => {
    const match = TASK_ID.exec(taskId);
    if (match === null) return undefined;
    const request = Number(match[1]);
    const at = times(request);
    if (at === undefined) return undefined;
    // Security: the task's state is exactly what check_access answers this agent for the
    // request, through the same boundary (scrubbed, schema-checked). A task id is the
    // request's number, not a secret: the surface has one principal (its bearer token),
    // which may read every request with check_access anyway.
    const envelope = await core.call('check_access', { request });
    if (envelope === undefined || envelope.status === 'refused' || envelope.status === 'error')
      return undefined;
    return view(request, at, envelope);
  };

  return {
    async created(tool, envelope) {
      if (tool !== 'request_access' || envelope.status !== 'pending') return undefined;
      const request = (envelope as { request?: unknown }).request;
      if (typeof request !== 'number') return undefined;
      const at = times(request);
      return at === undefined ? undefined : view(request, at, envelope);
    },
    get,
  };
}
