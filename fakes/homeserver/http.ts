/**
 * The fake homeserver's HTTP plumbing: the route table every endpoint file registers
 * into, the request shape handlers see, and Matrix-style errors.
 */
import type { HomeserverModel, MatrixEvent } from './model.js';
import type { E2eeState } from './e2ee-state.js';
import type { Lies } from './lies.js';
import type { ServeOptions } from './serve.js';
import type { SyncFilter } from './sync.js';

export interface FakeUser {
  readonly userId: string;
  readonly token: string;
  readonly password: string;
  readonly deviceId: string;
}

export interface RecordedRequest {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  /** Query parameters, access_token removed. */
  readonly query: Record<string, string>;
  readonly user: string | undefined;
  status: number;
}

export interface RouteContext {
  readonly model: HomeserverModel;
  readonly e2ee: E2eeState;
  readonly users: ReadonlyMap<string, FakeUser>;
  readonly now: () => number;
  /** Resolves after `ms`, or early when the model changes or the server closes. */
  readonly waitForChange: (ms: number) => Promise<void>;
  readonly filters: Map<string, SyncFilter>;
  readonly txns: Map<string, string>;
  /** The hostile mode's state: nothing unless a test lies (lies.ts). */
  readonly lies: Lies;
  /** An event as served to clients (serve.ts). */
  readonly serve: (event: MatrixEvent, opts: ServeOptions) => object;
  /** Users whose /sync is held (not answered) until released: a slow link to them. */
  readonly heldSyncs: ReadonlySet<string>;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly errcode: string,
    message: string,
  ) {
    super(message);
  }
}

export type Params = string[];
export type Handler = (
  ctx: RouteContext,
  req: Request,
  params: Params,
) => Promise<[number, unknown]> | [number, unknown];

export interface Request {
  readonly method: string;
  readonly query: URLSearchParams;
  readonly user: FakeUser | undefined;
  readonly body: unknown;
}

export interface Route {
  readonly method: string;
  readonly pattern: string[];
  readonly auth: boolean;
  readonly handler: Handler;
}

export const routes: Route[] = [];
export function route(method: string, path: string, handler: Handler, auth = true): void {
  routes.push({ method, pattern: path.split('/').filter(Boolean), auth, handler });
}

export function match(pattern: string[], segments: string[]): Params | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Params = [];
  for (let i = 0; i < pattern.length; i += 1) {
    const p = pattern[i] ?? '';
    const s = segments[i] ?? '';
    if (p === '*') params.push(s);
    else if (p !== s) return undefined;
  }
  return params;
}

export function me(req: Request): FakeUser {
  if (!req.user) throw new HttpError(401, 'M_MISSING_TOKEN', 'Missing access token');
  return req.user;
}

export function body(req: Request): Record<string, unknown> {
  const b = req.body;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) {
    throw new HttpError(400, 'M_NOT_JSON', 'Content not JSON.');
  }
  return b as Record<string, unknown>;
}
