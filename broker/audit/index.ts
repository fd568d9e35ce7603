/** The hash-chained audit log (docs/contracts.md §4). See log.ts for what it allows and denies. */
export { canonicalJson, sha256Hex, ZERO_HASH } from './canonical.js';
export { AuditError, type AuditErrorCode } from './errors.js';
export {
  AUDIT_EVENT_NAMES,
  AuditEventSchema,
  type AuditEvent,
  type AuditEventName,
} from './events.js';
export { type AuditFileHandle, type AuditFs, type AuditOpenFlags, nodeAuditFs } from './fs.js';
export { AuditLog, type AuditLogDeps, LOG_FILE } from './log.js';
export { CHECKPOINT_FILE } from './checkpoint.js';
export { acquireLock, LOCK_FILE, lockHolder, processIsAlive, type HeldLock } from './lock.js';
export type { AuditRecord } from './record.js';
export { verifyAudit, verifyAuditBytes, type VerifyResult } from './verify.js';
export type { ChainHead } from './chain.js';
export { anchorLine, anchorText, parseAnchor, type Anchor } from './anchor-text.js';
