/**
 * What the undo tests on the fake share: a whole daemon per test (the agent's two MCP
 * clients with it), the owner typing `undo …` as on the console, and reading a file back.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach } from 'vitest';
import type { UndoAnswer } from '../../../broker/operations/undo/service.js';
import { startBroker, type Broker } from '../../../support/daemon.js';

export interface UndoScene {
  broker: Broker;
  agent: Client;
  transfer: Client;
  /** The owner types `undo …`; its answer (throws when the reply carries none). */
  undo(words: string): Promise<UndoAnswer>;
  /** The owner types `undo …`; the text the console (or room) shows. */
  said(words: string): Promise<string>;
  /** A file's content on the fake, as text; undefined when it is not there. */
  read(path: string): Promise<string | undefined>;
}

/** Registers the hooks: a fresh daemon before each test, closed after it. */
export function useUndoScene(): UndoScene {
  const scene = {} as UndoScene;
  beforeEach(async () => {
    const broker = await startBroker();
    Object.assign(scene, {
      broker,
      agent: await broker.agent(),
      transfer: await broker.transfer(),
      undo: async (words: string) => {
        const reply = await broker.gateway.decide(words);
        if (reply?.undo === undefined)
          throw new Error(`no undo answer to "${words}": ${reply?.text ?? 'none'}`);
        return reply.undo;
      },
      said: async (words: string) => (await broker.gateway.decide(words))?.text ?? '',
      read: async (path: string) => (await broker.fake.readFile(path))?.toString(),
    } satisfies UndoScene);
  });
  afterEach(async () => {
    await scene.broker.close();
  });
  return scene;
}
