/**
 * Request-body guards for the MCP endpoints: a size limit (413), a deadline for receiving
 * the whole body, JSON only, and no JSON-RPC batches.
 */
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';

function rpcError(code: number, message: string) {
  return { jsonrpc: '2.0', id: null, error: { code, message } };
}

/** Parses a JSON body of at most `maxBytes` (after decompression). */
export function jsonBody(maxBytes: number): RequestHandler {
  // Security: bounded memory per request; a larger body is refused while it streams in.
  return express.json({ limit: maxBytes, strict: true, type: 'application/json' });
}

/** Maps body-parser failures to JSON-RPC shaped HTTP errors (no internal detail). */
export const bodyErrors: ErrorRequestHandler = (err: unknown, _req, res, next) => {
  const type = typeof err === 'object' && err !== null && 'type' in err ? err.type : undefined;
  const status =
    typeof err === 'object' && err !== null && 'status' in err && typeof err.status === 'number'
      ? err.status
      : 500;
  if (res.headersSent) {
    next(err);
    return;
  }
  if (type === 'entity.too.large') {
    res.status(413).json(rpcError(-32600, 'request body too large'));
  } else if (type === 'entity.parse.failed') {
    res.status(400).json(rpcError(-32700, 'parse error: the body is not valid JSON'));
  } else if (status >= 400 && status < 500) {
    res.status(status).json(rpcError(-32600, 'invalid request body'));
  } else {
    next(err);
  }
};

/** 415 unless a JSON body was parsed; 400 (-32600) for a batch array. */
export const singleJsonRpcMessage: RequestHandler = (req, res, next) => {
  if (!req.is('application/json')) {
    res.status(415).json(rpcError(-32000, 'Content-Type must be application/json'));
    return;
  }
  // Security: one message per request keeps one call = one audit trail, and stops a
  // single authenticated request from fanning out into many operations.
  if (Array.isArray(req.body)) {
    res
      .status(400)
      .json(rpcError(-32600, 'JSON-RPC batches are not supported; send one message per request'));
    return;
  }
  next();
};

/**
 * Destroys a request whose body has not fully arrived within `ms`.
 * Security: slow-body (slowloris) clients cannot hold a connection and a parser open.
 * Uploads to /transfer/blobs use an idle timeout instead, since a large file takes long.
 */
export function bodyDeadline(ms: number): RequestHandler {
  return (req, res, next) => {
    const timer = setTimeout(() => {
      if (!req.complete) req.destroy();
    }, ms);
    timer.unref();
    const clear = (): void => clearTimeout(timer);
    req.once('end', clear);
    res.once('close', clear);
    next();
  };
}

export const methodNotAllowed: RequestHandler = (_req, res) => {
  res.status(405).set('Allow', 'POST').json(rpcError(-32000, 'method not allowed; use POST'));
};
