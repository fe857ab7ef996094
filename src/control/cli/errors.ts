/**
 * How the CLI ends on a problem, in one place: a user error prints `error: <what happened and
 * what to do>` (exit 1; usage errors exit 2) and never a stack trace; output into a closed
 * pipe (`skep registry list | head -2`) ends the command quietly, as a Unix tool ends on
 * SIGPIPE. Only an unexpected failure mentions the stack, on request (`SKEP_DEBUG=1`).
 * A message may quote a server (the last lines of its log, the error it answered), so it is
 * written through `terminalSafe`.
 */
import { type ErrorCode, isSkepError, terminalSafe } from '../../shared/index.js';

/**
 * Wrong use of a command (missing operands, conflicting flags): exit status 2, like commander's.
 * Its code is never shown (`reportError` prints the message and the status says it all), so it
 * keeps the generic one rather than a code of its own.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code: ErrorCode = 'bad_request';
}

/** The exit status for `err`, after telling the user about it on stderr. */
export function reportError(
  err: unknown,
  writeRaw: (text: string) => void = (t) => process.stderr.write(t),
): number {
  const write = (text: string) => writeRaw(terminalSafe(text));
  if (err instanceof UsageError) {
    write(`error: ${err.message}\n`);
    return 2;
  }
  if (isSkepError(err)) {
    write(`error: ${err.message}\n`);
    return 1;
  }
  const e = err as NodeJS.ErrnoException;
  // A system error (a file that cannot be read, a port in use): the message names the path or
  // address; the stack would only name Skep's code.
  if (typeof e?.code === 'string' && typeof e.syscall === 'string') {
    write(`error: ${e.message}\n`);
    return 1;
  }
  const debug = process.env['SKEP_DEBUG'] === '1';
  write(
    debug && e instanceof Error && e.stack !== undefined
      ? `error: ${e.stack}\n`
      : `error: ${e instanceof Error ? e.message : String(err)}\n` +
          '(an unexpected failure inside skep; SKEP_DEBUG=1 shows where, please report it)\n',
  );
  return 1;
}

let pipeGuarded = false;

/**
 * Once, for the process: a write to a reader that went away (EPIPE: `| head`, `| less` quit)
 * ends the process quietly with the status so far; other output errors end it with status 1.
 */
export function endQuietlyOnClosedOutput(): void {
  if (pipeGuarded) return;
  pipeGuarded = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(Number(process.exitCode ?? 0));
      // stderr may be the broken one: say it only where it can still be read.
      if (stream !== process.stderr) process.stderr.write(`error: cannot write the output: ${err.message}\n`);
      process.exit(1);
    });
  }
}
