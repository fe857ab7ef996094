/**
 * The half of audit that only a running proxy needs: the auditor and its writer. The pipeline
 * stage imports this module on demand (the index exports the same), so a workload without
 * audit never loads them.
 */
export { Auditor } from './auditor.js';
export { AuditWriter, loggerSink, openAuditFile } from './writer.js';
