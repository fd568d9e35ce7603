/**
 * createServer(deps): the broker's HTTP daemon, assembled from injected parts.
 *
 * Every request passes, in order: the Host allow-list (403), then per route the surface's
 * bearer token (401), a body deadline, a JSON body of bounded size (413), one JSON-RPC
 * message (no batches), then the MCP surface or the blob endpoint. `GET /health` needs
 * no token. Nothing here decides on paths: that is the wall, inside the pipeline.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type Response,
} from 'express';
import type { CallContext } from './base/call.js';
import type { Clock } from './base/domain.js';
import type { Envelope } from './base/envelope.js';
import { errorDetail } from './base/errors.js';
import type { Logger } from './base/log.js';
import { BROKER_VERSION } from './base/version.js';
import type { BrokerConfig } from './config.js';
import type { Operations } from './operations/index.js';
import type { InFlight } from './operations/in-flight.js';
import type { Lifecycle } from './operations/lifecycle.js';
import type { GatewayPort } from './operations/ports.js';
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
import { createMcpSurface, type McpSurface } from './surfaces/mcp-endpoint.js';
import { metricsHandler, type BrokerMetrics } from './surfaces/metrics.js';
import { TRANSFER_INSTRUCTIONS, transferTools } from './surfaces/transfer/index.js';

export interface ApprovalGatewayPort extends GatewayPort {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface ServerDeps {
  readonly config: BrokerConfig;
  readonly operations: Operations;
  readonly requests: AccessRequests;
  readonly lifecycle: Lifecycle;
  readonly gateway: ApprovalGatewayPort;
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

const BLOB_ROUTE = '/transfer/blobs/:ticket';

export function createServer(deps: ServerDeps): BrokerServer {
  const { config, logger, operations, lifecycle } = deps;
  const { trail } = operations;
  const correlationId = deps.correlationId ?? randomUUID;

  const surfaceDeps = {
    logger,
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
  const agent = createMcpSurface(
    'agent',
    agentTools({
      files: operations.files,
      collections: operations.collections,
      requests: deps.requests,
      instances: config.instances,
    }),
    surfaceDeps,
    AGENT_INSTRUCTIONS,
    { requestTimes: (id) => deps.requests.times(id) },
  );
  const transfer = createMcpSurface(
    'transfer',
    transferTools({ transfer: operations.transfer, files: operations.files }),
    surfaceDeps,
    TRANSFER_INSTRUCTIONS,
  );
  const blobs = new BlobEndpoint({
    transfers: operations.blobs,
    scrub: deps.scrub,
    correlationId,
    idleTimeoutMs: config.server.request_timeout_ms,
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
  });

  // Security: audited without the presented token (only why it failed), rate-limited.
  const onAuthFailure = authFailureRecorder({
    now: deps.now,
    log: (fields) => logger.warn('authentication failed', fields),
    audit: (fields) => trail.bestEffort({ event: 'auth_failed', ...fields }),
  });
  const agentAuth = requireBearer('agent', config.tokens.agent, onAuthFailure);
  const transferAuth = requireBearer('transfer', config.tokens.transfer, onAuthFailure);
  const mcpBody = [
    bodyDeadline(config.server.request_timeout_ms),
    jsonBody(config.server.max_body_bytes),
    bodyErrors,
    singleJsonRpcMessage,
  ];

  const serveMcp = (surface: McpSurface) => async (req: Request, res: Response) => {
    try {
      await surface.handle(req, res, req.body);
    } catch (error) {
      const id = correlationId();
      logger.error('MCP request failed', { correlation_id: id, error: errorDetail(error) });
      if (!res.headersSent) {
        res.status(500).json({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32603, message: `internal error (${id})` },
        });
      }
    }
  };

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use((req, res, next) => {
    const started = deps.now();
    res.once('finish', () => {
      // Security: blob URLs carry a ticket; log the route, never the URL.
      const route = req.path.startsWith('/transfer/blobs/') ? BLOB_ROUTE : req.path.slice(0, 64);
      logger.debug('request', {
        method: req.method,
        route,
        status: res.statusCode,
        ms: deps.now() - started,
      });
    });
    next();
  });
  app.use(
    hostCheck(config.server.allowed_hosts, (host) =>
      logger.warn('host not allowed', { host: (host ?? '(none)').slice(0, 100) }),
    ),
  );
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok', version: BROKER_VERSION });
  });
  // Security: off unless tokens.metrics is set (then 404, like any unknown route); its own
  // token, so a scraper holds neither the agent's nor the transfer client's.
  if (config.tokens.metrics !== undefined && deps.metrics !== undefined) {
    const metricsAuth = requireBearer('metrics', config.tokens.metrics, onAuthFailure);
    app.get('/metrics', metricsAuth, metricsHandler(deps.metrics.registry));
  }
  app.post('/mcp', agentAuth, ...mcpBody, serveMcp(agent));
  app.all('/mcp', methodNotAllowed);
  app.post('/transfer', transferAuth, ...mcpBody, serveMcp(transfer));
  app.all('/transfer', methodNotAllowed);
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
  app.use((_req, res) => {
    res.status(404).json({
      status: 'refused',
      message: 'not found: the endpoints are /mcp, /transfer and /health',
    });
  });
  const finalErrors: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    const id = correlationId();
    logger.error('request failed', { correlation_id: id, error: errorDetail(error) });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res
      .status(500)
      .json({ status: 'error', message: `internal error (correlation id ${id})`, retry: true });
  };
  app.use(finalErrors);

  let server: Server | undefined;
  return {
    app,
    inFlight: operations.inFlight,
    sweep: () => lifecycle.sweep(),
    flushAuthFailures: () => onAuthFailure.flush(),
    async start() {
      // Security: a gateway that cannot start safely (wrong bot token or user, the room
      // encrypted, joinable by anyone, or without the approver) refuses the daemon's
      // start: the owner must see the problem, not find out later that nobody can
      // approve. An unreachable homeserver is not such a problem; the gateway starts
      // unhealthy and reconnects (existing grants keep working, request_access says so).
      try {
        await deps.gateway.start();
      } catch (error) {
        logger.error('approval gateway refused to start; fix the configuration and restart', {
          error: errorDetail(error),
        });
        throw error;
      }
      await lifecycle.onStart();
      const http = createHttpServer(app);
      // Security: headers must arrive promptly; bodies are bounded per route (deadline on
      // MCP posts, idle timeout on blob streams), so the whole-request timer is off.
      http.headersTimeout = config.server.request_timeout_ms;
      http.requestTimeout = 0;
      http.timeout = 0;
      http.keepAliveTimeout = 5_000;
      http.maxHeadersCount = 100;
      await new Promise<void>((resolve, reject) => {
        http.once('error', reject);
        http.listen(config.server.port, config.server.host, () => {
          http.off('error', reject);
          resolve();
        });
      });
      server = http;
      lifecycle.start();
      const { address, port } = http.address() as AddressInfo;
      const host = address.includes(':') ? `[${address}]` : address;
      logger.info('broker listening', { host: address, port, version: BROKER_VERSION });
      return { host: address, port, url: `http://${host}:${port}` };
    },
    async close() {
      await lifecycle.stop();
      const http = server;
      server = undefined;
      if (http !== undefined) {
        const closed = new Promise<void>((resolve) => http.close(() => resolve()));
        http.closeIdleConnections();
        const timer = setTimeout(() => http.closeAllConnections(), deps.drainTimeoutMs ?? 10_000);
        timer.unref();
        await closed;
        clearTimeout(timer);
      }
      // Security (of the record): no login can fail any more; the counted ones are
      // written before the daemon writes `stop` and closes the log.
      await onAuthFailure.flush();
      try {
        await deps.gateway.stop();
      } catch (error) {
        logger.warn('approval gateway did not stop cleanly', { error: errorDetail(error) });
      }
      logger.info('broker stopped');
    },
  };
}
