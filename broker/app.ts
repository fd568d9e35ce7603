/**
 * createServer(deps): the broker's HTTP daemon, assembled from injected parts in named
 * steps (createServer lists them): the MCP surfaces, the blob endpoint, the bearer
 * checks, the routes, and the server that starts and stops them.
 *
 * Every request passes, in order: the Host allow-list (403), then per route the surface's
 * bearer token (401), a body deadline, a JSON body of bounded size (413), one JSON-RPC
 * message (no batches), then the MCP surface or the blob endpoint. `GET /health` needs
 * no token. Nothing here decides on paths: that is the wall, inside the pipeline.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { CallContext } from './base/call.js';
import type { ApprovalGateway } from './approval/gateway.js';
import type { Clock } from './base/domain.js';
import type { Envelope } from './base/envelope.js';
import { errorDetail } from './base/errors.js';
import type { Logger } from './base/log.js';
import { BROKER_VERSION } from './base/version.js';
import type { BrokerConfig } from './config.js';
import type { Operations } from './operations/index.js';
import type { InFlight } from './operations/in-flight.js';
import type { Lifecycle } from './operations/lifecycle.js';
import type { AccessRequests } from './operations/requests.js';
import { AGENT_INSTRUCTIONS, agentTools } from './surfaces/agent/index.js';
import { BlobEndpoint } from './surfaces/blobs.js';
import { authFailureRecorder } from './surfaces/http/auth-failures.js';
import { requireBearer } from './surfaces/http/bearer.js';
import {
  bodyDeadline,
  bodyErrors,
  jsonBody,
  methodNotAllowed,
  singleJsonRpcMessage,
} from './surfaces/http/body.js';
import { hostCheck } from './surfaces/http/host.js';
import { drain, listen } from './surfaces/http/listen.js';
import { BLOB_ROUTE, requestLog } from './surfaces/http/request-log.js';
import { createMcpSurface, type McpSurface } from './surfaces/mcp-endpoint.js';
import { metricsHandler, type BrokerMetrics } from './surfaces/metrics.js';
import { TRANSFER_INSTRUCTIONS, transferTools } from './surfaces/transfer/index.js';

export interface ServerDeps {
  readonly config: BrokerConfig;
  readonly operations: Operations;
  readonly requests: AccessRequests;
  readonly lifecycle: Lifecycle;
  readonly gateway: ApprovalGateway;
  readonly logger: Logger;
  /** Removes every configured secret from a text (createSecretGuard over configSecrets). */
  readonly scrub: (text: string) => string;
  /** Whether a text holds a configured secret in any form `scrub` removes (the same guard). */
  readonly holdsSecret: (text: string) => boolean;
  readonly now: Clock;
  /** The daemon's metrics; `GET /metrics` serves them when config.tokens.metrics is set. */
  readonly metrics?: BrokerMetrics;
  readonly correlationId?: () => string;
  /** How long close() waits for in-flight requests before cutting them. Default 10 s. */
  readonly drainTimeoutMs?: number;
}

export interface BrokerServer {
  readonly app: Express;
  /** Starts the gateway, audits `start`, discards pending requests, listens, starts the sweep. */
  start(): Promise<{ host: string; port: number; url: string }>;
  /** Stops accepting, drains in-flight requests, stops the sweep and the gateway. The caller then closes audit and store. */
  close(): Promise<void>;
  /** One lifecycle pass now (tests, and the timer). */
  sweep(): Promise<void>;
  /**
   * Writes the failed logins counted but not yet written (a `summary` line). close() does
   * it once no request can come any more; the daemon's stop then writes its own counts.
   */
  flushAuthFailures(): Promise<void>;
  /** Operations currently running (aborted by grant ends). */
  readonly inFlight: InFlight;
}

export function createServer(deps: ServerDeps): BrokerServer {
  const correlationId = deps.correlationId ?? randomUUID;
  const surfaces = mcpSurfaces(deps, correlationId);
  const blobs = blobEndpoint(deps, correlationId);
  const auth = bearerChecks(deps);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(requestLog(deps));
  app.use(
    hostCheck(deps.config.server.allowed_hosts, (host) =>
      deps.logger.warn('host not allowed', { host: (host ?? '(none)').slice(0, 100) }),
    ),
  );
  routeHealthAndMetrics(app, deps, auth.metrics);
  routeMcp(app, deps, { surfaces, auth, correlationId });
  routeBlobs(app, blobs, auth.transfer);
  routeNotFoundAndErrors(app, deps, correlationId);
  return brokerServer(deps, app, auth.flush);
}

/** The two MCP surfaces (agent and transfer) over the operations. */
function mcpSurfaces(
  deps: ServerDeps,
  correlationId: () => string,
): { agent: McpSurface; transfer: McpSurface } {
  const { config, operations, requests } = deps;
  const surfaceDeps = {
    logger: deps.logger,
    correlationId,
    scrub: deps.scrub,
    holdsSecret: deps.holdsSecret,
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
    // Security: refused before the pipeline, but rate-limited and audited like every
    // refusal (operations/refusals.ts).
    onInvalidArguments: (ctx: CallContext, message: string, envelope: Envelope) =>
      operations.refusals.answer(
        {
          surface: ctx.surface,
          tool: ctx.tool,
          code: 'invalid_arguments',
          reason: message,
          correlation_id: ctx.correlationId,
        },
        envelope,
      ),
    // Security: the line says which field held a secret, never the value.
    onSecretInArguments: (ctx: CallContext, field: string, envelope: Envelope) =>
      operations.refusals.answer(
        {
          surface: ctx.surface,
          tool: ctx.tool,
          code: 'secret_in_arguments',
          field,
          correlation_id: ctx.correlationId,
        },
        envelope,
      ),
  };
  const agentDeps = {
    files: operations.files,
    collections: operations.collections,
    requests,
    instances: config.instances,
  };
  return {
    agent: createMcpSurface('agent', agentTools(agentDeps), surfaceDeps, AGENT_INSTRUCTIONS, {
      requestTimes: (id) => requests.times(id),
    }),
    transfer: createMcpSurface(
      'transfer',
      transferTools({ transfer: operations.transfer, files: operations.files }),
      surfaceDeps,
      TRANSFER_INSTRUCTIONS,
    ),
  };
}

/** The blob endpoint, where a ticket's bytes stream. */
function blobEndpoint(deps: ServerDeps, correlationId: () => string): BlobEndpoint {
  return new BlobEndpoint({
    transfers: deps.operations.blobs,
    scrub: deps.scrub,
    correlationId,
    idleTimeoutMs: deps.config.server.request_timeout_ms,
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
  });
}

/** Each route's bearer check (the metrics one only with tokens.metrics and metrics). */
function bearerChecks(deps: ServerDeps): {
  agent: RequestHandler;
  transfer: RequestHandler;
  metrics: RequestHandler | undefined;
  /** Writes the failed logins counted but not yet written (auth-failures.ts). */
  flush: () => Promise<void>;
} {
  const { config, logger } = deps;
  // Security: audited without the presented token (only why it failed), rate-limited.
  const onAuthFailure = authFailureRecorder({
    now: deps.now,
    log: (fields) => logger.warn('authentication failed', fields),
    audit: (fields) => deps.operations.trail.bestEffort({ event: 'auth_failed', ...fields }),
  });
  const metrics = config.tokens.metrics;
  return {
    agent: requireBearer('agent', config.tokens.agent, onAuthFailure),
    transfer: requireBearer('transfer', config.tokens.transfer, onAuthFailure),
    metrics:
      metrics === undefined || deps.metrics === undefined
        ? undefined
        : requireBearer('metrics', metrics, onAuthFailure),
    flush: () => onAuthFailure.flush(),
  };
}

/** GET /health (no token), and GET /metrics with its own token. */
function routeHealthAndMetrics(
  app: Express,
  deps: ServerDeps,
  metricsAuth: RequestHandler | undefined,
): void {
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok', version: BROKER_VERSION });
  });
  // Security: off unless tokens.metrics is set (then 404, like any unknown route); its own
  // token, so a scraper holds neither the agent's nor the transfer client's.
  if (metricsAuth !== undefined && deps.metrics !== undefined) {
    app.get('/metrics', metricsAuth, metricsHandler(deps.metrics.registry));
  }
}

/** POST /mcp and POST /transfer: the bearer, the body's checks, then the surface. */
function routeMcp(
  app: Express,
  deps: ServerDeps,
  parts: {
    surfaces: { agent: McpSurface; transfer: McpSurface };
    auth: { agent: RequestHandler; transfer: RequestHandler };
    correlationId: () => string;
  },
): void {
  const { server } = deps.config;
  const mcpBody = [
    bodyDeadline(server.request_timeout_ms),
    jsonBody(server.max_body_bytes),
    bodyErrors,
    singleJsonRpcMessage,
  ];
  const serve = (surface: McpSurface) => async (req: Request, res: Response) => {
    try {
      await surface.handle(req, res, req.body);
    } catch (error) {
      const id = parts.correlationId();
      deps.logger.error('MCP request failed', { correlation_id: id, error: errorDetail(error) });
      if (!res.headersSent) {
        res.status(500).json({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32603, message: `internal error (${id})` },
        });
      }
    }
  };
  app.post('/mcp', parts.auth.agent, ...mcpBody, serve(parts.surfaces.agent));
  app.all('/mcp', methodNotAllowed);
  app.post('/transfer', parts.auth.transfer, ...mcpBody, serve(parts.surfaces.transfer));
  app.all('/transfer', methodNotAllowed);
}

/** GET and PUT /transfer/blobs/<ticket>, with the transfer token; nothing else there. */
function routeBlobs(app: Express, blobs: BlobEndpoint, transferAuth: RequestHandler): void {
  // HEAD would spend the ticket without streaming; it is not part of the protocol.
  app.head(BLOB_ROUTE, (_req, res) => {
    res.status(405).set('Allow', 'GET, PUT').end();
  });
  app.get(BLOB_ROUTE, transferAuth, (req, res) =>
    blobs.download(req, res, String(req.params.ticket)),
  );
  app.put(BLOB_ROUTE, transferAuth, (req, res) =>
    blobs.upload(req, res, String(req.params.ticket)),
  );
  app.all(BLOB_ROUTE, (_req, res) => {
    res.status(405).set('Allow', 'GET, PUT').json({ status: 'refused', message: 'use GET or PUT' });
  });
}

/** 404 for every other route, and the last error handler (no detail crosses the wire). */
function routeNotFoundAndErrors(app: Express, deps: ServerDeps, correlationId: () => string): void {
  app.use((_req, res) => {
    res.status(404).json({
      status: 'refused',
      message: 'not found: the endpoints are /mcp, /transfer and /health',
    });
  });
  const finalErrors: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    const id = correlationId();
    deps.logger.error('request failed', { correlation_id: id, error: errorDetail(error) });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res
      .status(500)
      .json({ status: 'error', message: `internal error (correlation id ${id})`, retry: true });
  };
  app.use(finalErrors);
}

/** The daemon around the app: the gateway, the lifecycle and the listening socket. */
function brokerServer(
  deps: ServerDeps,
  app: Express,
  flushAuthFailures: () => Promise<void>,
): BrokerServer {
  const { lifecycle, logger } = deps;
  let server: Server | undefined;
  return {
    app,
    inFlight: deps.operations.inFlight,
    sweep: () => lifecycle.sweep(),
    flushAuthFailures,
    async start() {
      await startGateway(deps);
      await lifecycle.onStart();
      server = await listen(app, deps.config.server);
      lifecycle.start();
      const { address, port } = server.address() as AddressInfo;
      const host = address.includes(':') ? `[${address}]` : address;
      logger.info('broker listening', { host: address, port, version: BROKER_VERSION });
      return { host: address, port, url: `http://${host}:${port}` };
    },
    async close() {
      await lifecycle.stop();
      const http = server;
      server = undefined;
      if (http !== undefined) await drain(http, deps.drainTimeoutMs ?? 10_000);
      // Security (of the record): no login can fail any more; the counted ones are
      // written before the daemon writes `stop` and closes the log.
      await flushAuthFailures();
      try {
        await deps.gateway.stop();
      } catch (error) {
        logger.warn('approval gateway did not stop cleanly', { error: errorDetail(error) });
      }
      logger.info('broker stopped');
    },
  };
}

/**
 * Security: a gateway that cannot start safely (wrong bot token or user, the room
 * encrypted, joinable by anyone, or without the approver) refuses the daemon's start:
 * the owner must see the problem, not find out later that nobody can approve. An
 * unreachable homeserver is not such a problem; the gateway starts unhealthy and
 * reconnects (existing grants keep working, request_access says so).
 */
async function startGateway(deps: ServerDeps): Promise<void> {
  try {
    await deps.gateway.start();
  } catch (error) {
    deps.logger.error('approval gateway refused to start; fix the configuration and restart', {
      error: errorDetail(error),
    });
    throw error;
  }
}
