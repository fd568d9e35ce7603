/**
 * The one base of every error the broker and its CLI throw: a literal-union `code` per
 * subclass (the stable name of the cause, end to end), the `cause` kept, and `name` set by
 * each subclass as a literal (bundling may rename classes; a literal survives).
 *
 * Where errors leave the process they are mapped from `code`: the pipeline to a result
 * envelope (operations/pipeline.ts), the CLI to an exit code (cli/client/transfer/errors.ts).
 * An error that is not a CodedError is unexpected: it is logged and answered with a
 * generic message, never its own text.
 *
 * Importing nothing: the agent's CLI bundle includes this file (docs/architecture.md).
 */
export abstract class CodedError<Code extends string = string> extends Error {
  abstract override readonly name: string;
  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}
