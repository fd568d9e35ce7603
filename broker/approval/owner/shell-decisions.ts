/**
 * A decision made over the owner socket (`broker approve`, `deny`, `revoke`), as the
 * console or the room shows it: the command, named as typed in a shell on the broker's
 * host, then the engine's answer. Security: whoever runs as the broker's user decides
 * without the room; showing each such decision where the owner watches means none is
 * made unseen (a refused one included: an attempt is news too).
 */
import type { Command } from '../command.js';
import { renderCommand } from '../parser.js';
import { reply, type Reply } from '../reply.js';

/** The notice for `command` and its answer; undefined for a command that decides nothing. */
export function shellDecision(command: Command, answer: Reply): Reply | undefined {
  if (command.kind === 'show' || command.kind === 'status' || command.kind === 'help') {
    return undefined;
  }
  const head = reply([
    [
      "From a shell on the broker's host (owner socket): ",
      { strong: `broker ${renderCommand(command)}` },
    ],
  ]);
  return { text: `${head.text}\n${answer.text}`, html: `${head.html}<br>${answer.html}` };
}
