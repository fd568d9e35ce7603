/**
 * Byte-exact HTTP/1.x requests over a plain socket, for what Node's HTTP client will not
 * send: duplicate Host headers, absolute-form targets, HTTP/1.0, conflicting framing.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  /** 0 when the server closed without answering. */
  readonly status: number;
  readonly head: string;
  readonly body: string;
}

/** Sends `text` as is and reads until the server closes (send `Connection: close`). */
export function rawExchange(
  port: number,
  text: string | Buffer,
  timeoutMs = 5_000,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    const finish = (): void => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks).toString('utf8');
      const split = all.indexOf('\r\n\r\n');
      const head = split < 0 ? all : all.slice(0, split);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body: split < 0 ? '' : all.slice(split + 4) });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      finish();
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', finish);
    socket.on('error', () => undefined);
  });
}

/** A request text with the given start line, header lines and body (Content-Length added). */
export function requestText(startLine: string, headers: readonly string[], body = ''): string {
  const length = body === '' ? [] : [`Content-Length: ${Buffer.byteLength(body)}`];
  return [startLine, ...headers, ...length, 'Connection: close', '', body].join('\r\n');
}
