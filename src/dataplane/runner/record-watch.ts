/**
 * A runner never outlives the record that justifies it: this polls the store and reports
 * once when the workload's record is gone or names another runner (the workload was removed
 * or replaced behind the runner's back, or SKEP_HOME was deleted). A store that is only busy
 * (another process held SQLite's lock past `busy_timeout`) proves nothing about the record:
 * the read is retried at the next tick and the runner keeps serving.
 */
import type { Logger } from '../../shared/index.js';

export interface RecordWatchOptions {
  workload: string;
  /** Whether this runner is still the workload's registered runner; may throw (a store read). */
  isOurs: () => boolean;
  /** Called once, when the record is gone or no longer ours. */
  onLost: () => void;
  logger: Logger;
  intervalMs: number;
}

/**
 * SQLite's "another connection holds the lock" results (`SQLITE_BUSY`, `SQLITE_LOCKED` and
 * their extended codes, https://sqlite.org/rescode.html#busy): transient by definition.
 */
export function isStoreBusy(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** Starts the watch; the returned function stops it (idempotent). */
export function watchRecord(options: RecordWatchOptions): () => void {
  const { workload, logger } = options;
  let busyStreak = 0;
  let lost = false;
  const timer = setInterval(() => {
    if (lost) return;
    let ours: boolean;
    try {
      ours = options.isOurs();
      busyStreak = 0;
    } catch (err) {
      if (isStoreBusy(err)) {
        busyStreak++;
        // One warning per busy spell; the rest at debug, so a long lock does not flood the log.
        const fields = { workload, err, attempt: busyStreak };
        const message = 'the store is busy; checking the workload record again later';
        if (busyStreak === 1) logger.warn(fields, message);
        else logger.debug(fields, message);
        return;
      }
      // Any other read error means the store itself is unusable (its file removed or
      // replaced): the runner could not record its status any more, so it stops.
      logger.error({ workload, err }, 'cannot read the workload record; stopping');
      ours = false;
    }
    if (!ours) {
      lost = true;
      clearInterval(timer);
      logger.warn({ workload }, 'the workload record is gone or names another runner; stopping');
      options.onLost();
    }
  }, options.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
