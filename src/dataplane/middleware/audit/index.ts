/**
 * Audit (as ToolHive's audit middleware has it): the configuration, the events in the reference's
 * wire format, a writer that never blocks the proxy, and the `Auditor` that follows exchanges. The
 * pipeline stage (`src/dataplane/pipeline/stages/audit.ts`) builds it from the run configuration.
 */
export type { AuditConfig } from './config.js';
export { AUDIT_DEFAULTS, AUDIT_EVENT_TYPES, loadAuditConfigFile, parseAuditConfig } from './config.js';
export type { AuditEvent, AuditOutcome } from './event.js';
export type { AuditorOptions } from './auditor.js';
export type { AuditSink } from './writer.js';
// The auditor and its writer: `./runtime.js`, imported on demand by the audit stage.
