/**
 * A TCP proxy that passes bytes through unchanged and can hold one direction at a chosen
 * point: "stop forwarding what the server sends once 1 MiB more has passed". Put in front
 * of Nextcloud, it makes a large transfer stall half-way for as long as a test needs (a
 * slow server, as far as the broker can tell), so a revoke lands while the bytes are
 * moving, without a sleep or a race. Held bytes are kept, and forwarded on `release`.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** `up`: client → server (an upload to Nextcloud); `down`: server → client (a download). */
export type Direction = 'up' | 'down';

export interface GateProxy {
  /** `http://127.0.0.1:<port>`: use it in place of the target's URL. */
  readonly url: string;
  /** Holds `direction` once `bytes` more have passed it; resolves when it holds. */
  holdAfter(direction: Direction, bytes: number): Promise<void>;
  /**
   * Holds the next request whose request line matches `line` (e.g. `PROPFIND <path>`):
   * that connection's upward bytes stop before the line and the server never sees the
   * request until `release`; every other connection flows. Resolves when it holds.
   */
  holdRequest(line: RegExp): Promise<void>;
  /** Forwards what was held and lets everything flow again. */
  release(): void;
  /** Drops every connection at once, as a server that went away. */
  cut(): void;
  /**
   * The targets of the MKCOL requests that passed, in order: what a test needs to find
   * the chunked-upload folders the broker made (from Nextcloud 34 on, the uploads
   * collection cannot be listed).
   */
  mkcols(): readonly string[];
  close(): Promise<void>;
}

interface Gate {
  readonly direction: Direction;
  remaining: number;
  held: boolean;
  readonly onHeld: () => void;
}

export async function startGateProxy(target: string): Promise<GateProxy> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let gate: Gate | undefined;
  let requestHold: { readonly line: RegExp; readonly onHeld: () => void } | undefined;
  /** Connections whose request is held (`holdRequest`): a drain does not wake them. */
  const heldRequests = new Set<Socket>();
  const waiting: (() => void)[] = [];
  const made: string[] = [];
  /** The last bytes sent upward on each connection, so a request line cut in two is found. */
  const tails = new WeakMap<Socket, string>();
  /** Records the MKCOLs in `chunk`; answers the text scanned (with the joined tail). */
  const scanUp = (from: Socket, chunk: Buffer): string => {
    const text = (tails.get(from) ?? '') + chunk.toString('latin1');
    for (const m of text.matchAll(/MKCOL (\/\S+) HTTP\/1\.1\r\n/g))
      if (m[1] !== undefined) made.push(m[1]);
    // Not anchored to a line start: on a kept-alive connection a request line follows the
    // previous request's body directly. A request line is short: keep enough to join one
    // cut at a chunk boundary (a line seen twice this way is listed once).
    tails.set(from, text.slice(-512));
    return text;
  };

  /** Forwards `from` → `to`, through the gate for `direction`. */
  const forward = (from: Socket, to: Socket, direction: Direction): void => {
    from.on('data', (chunk: Buffer) => {
      const text = direction === 'up' ? scanUp(from, chunk) : '';
      const hold = requestHold;
      if (hold !== undefined && direction === 'up' && hold.line.test(text)) {
        // The whole chunk waits (a request line cut in two: its first part went ahead,
        // and a request is not served before its line ends).
        requestHold = undefined;
        heldRequests.add(from);
        from.pause();
        waiting.push(() => {
          heldRequests.delete(from);
          if (!to.destroyed) to.write(chunk);
          from.resume();
        });
        hold.onHeld();
        return;
      }
      const g = gate;
      if (g === undefined || g.direction !== direction) {
        if (!to.write(chunk)) from.pause();
        return;
      }
      if (g.held || chunk.length > g.remaining) {
        const passed = g.held ? 0 : g.remaining;
        if (passed > 0) to.write(chunk.subarray(0, passed));
        g.remaining = 0;
        from.pause();
        waiting.push(() => {
          if (!to.destroyed) to.write(chunk.subarray(passed));
          from.resume();
        });
        if (!g.held) {
          g.held = true;
          g.onHeld();
        }
        return;
      }
      g.remaining -= chunk.length;
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (heldRequests.has(from)) return;
      if (gate?.held !== true || gate.direction !== direction) from.resume();
    });
    from.on('end', () => to.end());
  };

  const server: Server = createServer((client) => {
    const server = connect(Number(upstream.port), upstream.hostname);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      // One side failing ends the other the same way (a reset stays a reset).
      s.on('error', () => undefined);
    }
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
    forward(client, server, 'up');
    forward(server, client, 'down');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    holdAfter: (direction, bytes) =>
      new Promise<void>((onHeld) => {
        gate = { direction, remaining: bytes, held: false, onHeld };
      }),
    holdRequest: (line) =>
      new Promise<void>((onHeld) => {
        requestHold = { line, onHeld };
      }),
    release: () => {
      gate = undefined;
      requestHold = undefined;
      for (const resume of waiting.splice(0)) resume();
    },
    cut: () => {
      gate = undefined;
      requestHold = undefined;
      heldRequests.clear();
      waiting.length = 0;
      for (const s of sockets) s.destroy();
    },
    mkcols: () => [...new Set(made)],
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Starts `transfer`, waits until `direction` holds after `bytes`, runs `meanwhile` (a
 * revoke, say) while the bytes stand still, then lets them flow; resolves with what the
 * transfer gave.
 */
export async function whileHeld<T>(
  gate: GateProxy,
  direction: Direction,
  bytes: number,
  transfer: () => Promise<T>,
  meanwhile: () => Promise<unknown>,
): Promise<T> {
  const held = gate.holdAfter(direction, bytes);
  const running = transfer();
  await held;
  await meanwhile();
  gate.release();
  return running;
}
