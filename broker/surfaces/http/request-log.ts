/** One debug line per HTTP request: method, route, status and time taken. */
import type { RequestHandler } from 'express';
import type { Clock } from '../../base/domain.js';
import type { Logger } from '../../base/log.js';

/** How a blob URL is logged: by its route, never itself (it carries a ticket). */
export const BLOB_ROUTE = '/transfer/blobs/:ticket';

export function requestLog(deps: { readonly logger: Logger; readonly now: Clock }): RequestHandler {
  return (req, res, next) => {
    const started = deps.now();
    res.once('finish', () => {
      // Security: blob URLs carry a ticket; log the route, never the URL.
      const route = req.path.startsWith('/transfer/blobs/') ? BLOB_ROUTE : req.path.slice(0, 64);
      deps.logger.debug('request', {
        method: req.method,
        route,
        status: res.statusCode,
        ms: deps.now() - started,
      });
    });
    next();
  };
}
