/**
 * A man-in-the-middle in front of the fake Matrix homeserver, for what a real network
 * or a misbehaving homeserver can do that the fake will not: hold the bot's /sync
 * requests (so events land during its start-up), and deliver an old event again in
 * later sync responses (a replay).
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

export interface SyncProxy {
  readonly url: string;
  /** From now on, /sync requests wait until `release()`. */
  holdSyncs(): void;
  release(): void;
  /** /sync requests waiting right now. */
  held(): number;
  /** Puts `event` (a stored event of `roomId`) into the next `times` sync responses. */
  replay(roomId: string, event: object, times: number): void;
  /** How many times a replayed event was put into a response. */
  replayed(): number;
  close(): Promise<void>;
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

export async function startSyncProxy(upstream: string): Promise<SyncProxy> {
  const target = new URL(upstream);
  let holding = false;
  const waiting: (() => void)[] = [];
  const pending: { roomId: string; event: object; left: number }[] = [];
  let replayedCount = 0;

  const inject = (body: Json): void => {
    for (const p of pending) {
      if (p.left <= 0) continue;
      const rooms = (body.rooms ??= {}) as Json;
      const join = (rooms.join ??= {}) as Json;
      const room = (join[p.roomId] ??= {
        timeline: { events: [], limited: false },
        state: { events: [] },
        ephemeral: { events: [] },
        account_data: { events: [] },
        unread_notifications: {},
      }) as Json;
      const timeline = (room.timeline ??= { events: [], limited: false }) as { events: object[] };
      timeline.events.push(structuredClone(p.event));
      p.left -= 1;
      replayedCount += 1;
    }
  };

  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readAll(req);
    const isSync = (req.url ?? '').startsWith('/_matrix/client/v3/sync');
    if (isSync && holding) await new Promise<void>((resolve) => waiting.push(resolve));
    const upstreamRes = await new Promise<IncomingMessage>((resolve, reject) => {
      const out = request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: target.host },
        },
        resolve,
      );
      out.on('error', reject);
      out.end(body);
    });
    let payload = await readAll(upstreamRes);
    if (isSync && upstreamRes.statusCode === 200 && pending.some((p) => p.left > 0)) {
      const json = JSON.parse(payload.toString('utf8')) as Json;
      inject(json);
      payload = Buffer.from(JSON.stringify(json));
    }
    const headers = { ...upstreamRes.headers };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    delete headers.connection;
    res.writeHead(upstreamRes.statusCode ?? 502, { ...headers, 'content-length': payload.length });
    res.end(payload);
  };

  const server = createServer((req, res) => {
    forward(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    holdSyncs: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const go of waiting.splice(0)) go();
    },
    held: () => waiting.length,
    replay: (roomId, event, times) => {
      pending.push({ roomId, event, left: times });
    },
    replayed: () => replayedCount,
    close: () =>
      new Promise<void>((resolve) => {
        for (const go of waiting.splice(0)) go();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
