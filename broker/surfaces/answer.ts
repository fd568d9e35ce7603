/**
 * The one way a surface answers a verb of operations/: a refusal or an error as the
 * operation made it, or the success worded by `render` with the outcome's warnings. The
 * agent tools, the transfer tools and the blob endpoint all answer through this.
 */
import { withWarnings, type Envelope } from '../base/envelope.js';
import type { Outcome } from '../operations/pipeline.js';

export function answer<T>(outcome: Outcome<T>, render: (value: T) => Envelope): Envelope {
  return outcome.ok ? withWarnings(render(outcome.value), outcome.warnings) : outcome.envelope;
}
