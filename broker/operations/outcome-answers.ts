/**
 * What an operation's `outcome` line records of Nextcloud's answers (docs/contracts.md
 * §4): `nc_request_ids`, the `X-Request-Id` of every answer to a request the operation
 * sent, in the order they came, and `nc_files`, the `OC-FileId` / `OC-ETag` of the
 * answers that carried them. Nextcloud logs every request under that id (admin_audit),
 * so a request of the broker's can be told from one it did not send.
 * (An answer that arrives after the step ended goes to the client's `onAnswer`: answers.ts.)
 */
import type { OutcomeDetail } from '../audit/events.js';
import type { NextcloudAnswer } from '../nextcloud/client.js';

/** More answers than this in one operation are counted, not listed (`nc_requests_unlisted`). */
export const MAX_LISTED_ANSWERS = 1000;

/** What an outcome (or an `nc_requests` line) records of Nextcloud's answers. */
export type AnswerFields = Pick<
  OutcomeDetail,
  'nc_request_ids' | 'nc_files' | 'nc_requests_unlisted'
>;

/** The audit fields of a list of answers (none when it is empty). */
export function answerFields(answers: readonly NextcloudAnswer[], unlisted = 0): AnswerFields {
  if (answers.length === 0 && unlisted === 0) return {};
  const files = answers.flatMap((a) =>
    a.fileId === undefined && a.etag === undefined
      ? []
      : [
          {
            request_id: a.requestId,
            ...(a.fileId === undefined ? {} : { file_id: a.fileId }),
            ...(a.etag === undefined ? {} : { etag: a.etag }),
          },
        ],
  );
  return {
    nc_request_ids: answers.map((a) => a.requestId),
    ...(files.length === 0 ? {} : { nc_files: files }),
    ...(unlisted === 0 ? {} : { nc_requests_unlisted: unlisted }),
  };
}

export class OutcomeAnswers {
  readonly #answers: NextcloudAnswer[] = [];
  #unlisted = 0;

  /** The sink a step's requests report to (NextcloudPort.recording). */
  readonly add = (answer: NextcloudAnswer): void => {
    if (this.#answers.length < MAX_LISTED_ANSWERS) this.#answers.push(answer);
    else this.#unlisted += 1;
  };

  /** The outcome line with these fields added. */
  outcome<T extends object>(line: T): T {
    return { ...line, ...this.fields() };
  }

  /** The outcome's fields; none when no answer showed an id (nothing reached Nextcloud). */
  fields(): AnswerFields {
    return answerFields(this.#answers, this.#unlisted);
  }
}
