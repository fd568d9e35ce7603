/** The agent surface (`POST /mcp`): exactly these tools, no file content tools. */
import { COLLECTION_KINDS, COLLECTION_NAMES, collectionWord } from '../../base/kinds.js';
import { ToolRegistry } from '../tool.js';
import { registerCalendarCreateEvent } from './calendar-create-event.js';
import { registerCalendarEvents } from './calendar-events.js';
import { registerCheckAccess } from './check-access.js';
import { registerCollections } from './collections.js';
import { registerContactsSearch } from './contacts-search.js';
import type { AgentToolDeps } from './deps.js';
import { registerList } from './list.js';
import { registerListInstances } from './list-instances.js';
import { registerMkdir } from './mkdir.js';
import { registerMove } from './move.js';
import { registerRequestAccess } from './request-access.js';
import { registerSearch } from './search.js';
import { registerTrash } from './trash.js';

export type { AgentToolDeps } from './deps.js';

/** `Calendars and address books`: the collection kinds (base/kinds.ts), in words. */
const COLLECTION_PLURALS = COLLECTION_KINDS.map((k, i) => {
  const words = `${collectionWord(k)}s`;
  return i === 0 ? `${words[0]?.toUpperCase() ?? ''}${words.slice(1)}` : words;
}).join(' and ');

export const AGENT_INSTRUCTIONS =
  'You start with no access to any file. Call list_instances, then request_access with the paths you ' +
  'need and a reason; the owner decides. Poll check_access with the request number. search finds files by ' +
  `name below a folder you may list. ${COLLECTION_PLURALS} are granted one by one: request ` +
  `items of kind ${COLLECTION_NAMES} with the name collections lists. File content never ` +
  "passes through this server: the `broker` CLI on your (the agent's) host stages files locally " +
  '(fetch/push/checkout/checkin), or `broker mcp`, its tools over MCP.';

export function agentTools(deps: AgentToolDeps): ToolRegistry {
  const registry = new ToolRegistry();
  registerRequestAccess(registry, deps);
  registerCheckAccess(registry, deps);
  registerListInstances(registry, deps);
  registerList(registry, deps);
  registerSearch(registry, deps);
  registerMove(registry, deps);
  registerTrash(registry, deps);
  registerMkdir(registry, deps);
  registerCollections(registry, deps);
  registerCalendarEvents(registry, deps);
  registerCalendarCreateEvent(registry, deps);
  registerContactsSearch(registry, deps);
  return registry;
}
