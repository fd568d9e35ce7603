/** The daemon's listening socket: opened with the timers the routes rely on, drained on close. */
import { createServer as createHttpServer, type Server } from 'node:http';
import type { Express } from 'express';

/** Listens on `host:port` (the server section of the config). */
export async function listen(
  app: Express,
  server: { readonly host: string; readonly port: number; readonly request_timeout_ms: number },
): Promise<Server> {
  const http = createHttpServer(app);
  // Security: headers must arrive promptly; bodies are bounded per route (deadline on
  // MCP posts, idle timeout on blob streams), so the whole-request timer is off.
  http.headersTimeout = server.request_timeout_ms;
  http.requestTimeout = 0;
  http.timeout = 0;
  http.keepAliveTimeout = 5_000;
  http.maxHeadersCount = 100;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(server.port, server.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  return http;
}

/** Stops accepting, lets requests in flight finish for `timeoutMs`, then cuts the rest. */
export async function drain(http: Server, timeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => http.close(() => resolve()));
  http.closeIdleConnections();
  const timer = setTimeout(() => http.closeAllConnections(), timeoutMs);
  timer.unref();
  await closed;
  clearTimeout(timer);
}
