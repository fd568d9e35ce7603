/**
 * The agent surface's Nextcloud verbs, each one `Pipeline.run` with its wall op.
 * Tools call these; only the steps below ever hold a Nextcloud client.
 */
import { OperationRefusal, type Outcome, type Pipeline } from '../operations.js';
import { refused } from '../base/envelope.js';
import type { EntryLike } from './ports.js';
import { type CallContext } from '../base/call.js';

export const LIST_PAGE_SIZE = 200;

export interface Listing {
  entries: EntryLike[];
  next?: string;
}

export class FileOperations {
  constructor(private readonly pipeline: Pipeline) {}

  list(
    ctx: CallContext,
    args: { instance: string; path: string; cursor?: string },
  ): Promise<Outcome<Listing>> {
    return this.pipeline.run(
      ctx,
      { op: 'list', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const page = await client.list(allowed.paths[0] ?? '', args.cursor, LIST_PAGE_SIZE);
        return page.next === undefined ? { entries: page.entries } : page;
      },
      { describe: (v) => ({ entries: v.entries.length, more: v.next !== undefined }) },
    );
  }

  mkdir(ctx: CallContext, args: { instance: string; path: string }): Promise<Outcome<null>> {
    return this.pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        await client.mkdir(first(allowed.paths));
        return null;
      },
    );
  }

  move(
    ctx: CallContext,
    args: { instance: string; from: string; to: string },
  ): Promise<Outcome<null>> {
    return this.pipeline.run(
      ctx,
      { op: 'move', instance: args.instance, from: args.from, to: args.to },
      async (client, allowed) => {
        const [from, to] = allowed.paths;
        if (from === undefined || to === undefined)
          throw new Error('move decided without two paths');
        await client.move(from, to);
        return null;
      },
    );
  }

  trash(ctx: CallContext, args: { instance: string; path: string }): Promise<Outcome<null>> {
    return this.pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        // Security: a DELETE without the trash bin is permanent; only trash what can be restored.
        const caps = await client.capabilities();
        if (!caps.undelete) {
          throw new OperationRefusal(
            refused(
              'trash_unavailable',
              'the trash bin is disabled on this instance, so deleting would be permanent; nothing was deleted',
              { hint: 'ask the owner to enable the trash bin, or move the item elsewhere instead' },
            ),
          );
        }
        await client.trash(first(allowed.paths));
        return null;
      },
    );
  }
}

function first(paths: readonly string[]): string {
  const path = paths[0];
  // Security: a step never runs without the wall's canonical path.
  if (path === undefined || path === '') throw new Error('write step without a canonical path');
  return path;
}
