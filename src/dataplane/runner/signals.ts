/**
 * How a runner process is asked to stop: the first SIGTERM or SIGINT is logged and aborts the
 * returned controller (the runner then stops its server and records the status); a second
 * one takes the signal's default action and ends the process at once.
 */
import type { Logger } from '../../shared/index.js';

export function abortOnStopSignals(logger: Logger): AbortController {
  const controller = new AbortController();
  const stop = (signal: string) => {
    logger.info({ signal }, 'stopping');
    controller.abort();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return controller;
}
