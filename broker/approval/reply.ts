/** The answer to one owner command, in plain text and as Matrix HTML. */
import type { GrantRecord } from '../base/domain.js';
import type { UndoAnswer } from '../operations/undo/service.js';
import { renderLines, type Line, type Rendered } from './format.js';

/** The answer to one command. `granted`/`revoked`: what changed, for the caller to act on. */
export interface Reply {
  /** Plain text (Matrix `body`, console output). */
  text: string;
  /** The same as Matrix `formatted_body`: paths in `<code>`, everything escaped. */
  html: string;
  granted?: GrantRecord[];
  revoked?: GrantRecord[];
  /** The command was refused and changed nothing (the owner commands exit 3 on it). */
  refused?: true;
  /** What an `undo` did, item by item (`broker undo` prints it and exits by it). */
  undo?: UndoAnswer;
  /**
   * Further messages that belong to this answer, sent after it in order (`show N` of a
   * request too large for one Matrix event).
   */
  continued?: Rendered[];
}

export function reply(
  lines: readonly Line[],
  extra: Pick<Reply, 'granted' | 'revoked'> = {},
): Reply {
  const r: Rendered = renderLines(lines);
  return { text: r.plain, html: r.html, ...extra };
}

export const say = (...texts: string[]): Reply => reply(texts.map((t) => [t]));
