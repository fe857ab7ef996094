/**
 * Why a workload failed to start, in words a person can act on. The runner records the
 * failure in the workload's status (`server failed to start: server went away during
 * initialize: server output ended; restarting in 1s (attempt 1/10)`), which names the proxy's
 * view; the cause is usually in the server's own log (npm's `E404`, a Python traceback). This
 * reads both and says what happened, the evidence, and what to do.
 */

export interface StartFailure {
  /** One line: what happened (the first line `skep run` prints after `failed to start: `). */
  summary: string;
  /** The server log's last relevant lines, as they are. */
  evidence: string[];
  /** What to do about it. */
  hint: string | undefined;
}

/** The runner's note that it will try again, at the end of a status context. */
const RETRY_NOTE = /; (?:restarting|retrying) in \d+s \(attempt [^)]*\)$/;

/** Whether a `starting` status context reports a failed attempt (the runner will try again). */
export function isFailedAttempt(context: string): boolean {
  return RETRY_NOTE.test(context);
}

/** The failure without the runner's retry bookkeeping. */
function failureOf(context: string): string {
  return context
    .replace(RETRY_NOTE, '')
    .replace(/; gave up after \d+ restarts$/, '')
    .replace(/^server failed to start: /, '');
}

/**
 * The lines of the server log written by the last start: after the runtime's last start
 * marker (`[skep] sandboxed ...` / `[skep] not sandboxed ...`), without Skep's own lines and
 * npm's notices.
 */
export function lastAttemptLines(log: string): string[] {
  const lines = log.split('\n');
  let start = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (/^\[skep\] (?:sandboxed|not sandboxed)/.test(lines[i] as string)) {
      start = i + 1;
      break;
    }
  }
  return lines
    .slice(start)
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '' && !l.startsWith('[skep] ') && !/^npm (?:notice|warn)\b/.test(l));
}

const NETWORK_CODES = /^(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH)$/;

/** npm's own account of a failed `npx -y <package>`: `npm error code E404` and what follows. */
function npmFailure(lines: string[]): StartFailure | undefined {
  const codeLine = lines.find((l) => /^npm error code \S+/.test(l));
  if (codeLine === undefined) return undefined;
  const code = codeLine.replace(/^npm error code /, '').trim();
  const evidence = lines.filter(
    (l) =>
      /^npm error\s+\S/.test(l) && !/^npm error\s+\d{3}\s*$/.test(l) && !/complete log of this run/.test(l),
  );
  const detail = evidence
    .map((l) => l.replace(/^npm error\s*/, '').trim())
    .filter((l) => l !== '' && !/^(code|errno|syscall) /.test(l) && !/^\d{3}$/.test(l));
  if (code === 'E404') {
    const missing = lines
      .map((l) => /requested resource '(.+?)(?:@\*)?' could not be found/.exec(l)?.[1])
      .find((m) => m !== undefined);
    return {
      summary: `npm error E404: ${missing === undefined ? detail[0] : `package '${missing}' is not in the npm registry`}`,
      evidence: evidence.slice(0, 4),
      hint: "check the package name after npx:// ('skep registry search <word>' lists the catalog's servers)",
    };
  }
  return {
    summary: `npm error ${code}${detail[0] === undefined ? '' : `: ${detail[0]}`}`,
    evidence: evidence.slice(0, 6),
    hint: NETWORK_CODES.test(code)
      ? 'npm could not reach its registry: check the network connection, a proxy (HTTPS_PROXY), or the registry npm uses (npm config get registry)'
      : undefined,
  };
}

const NOT_MCP =
  'run an MCP server here: a program that speaks MCP on stdin/stdout, or give --transport sse|streamable-http for one that serves HTTP';

/** What the proxy saw, in words. */
function proxyFailure(failure: string): { summary: string; hint: string | undefined } {
  if (failure.includes('no connected client can answer initialize'))
    return {
      summary:
        'the program is not an MCP server: it sent the MCP initialize request back instead of answering it',
      hint: NOT_MCP,
    };
  if (/initialize failed: no protocolVersion/.test(failure))
    return {
      summary:
        'the program is not an MCP server: its answer to the MCP initialize request has no protocolVersion',
      hint: NOT_MCP,
    };
  if (/initialize timed out/.test(failure))
    return {
      summary: 'the program did not answer the MCP initialize request in time',
      hint: `is it an MCP server? ${NOT_MCP}`,
    };
  if (/server went away during initialize|server exited before listening/.test(failure))
    return {
      summary: 'the server exited before it answered the MCP initialize request',
      hint: undefined,
    };
  const initError = /^server initialize failed: (.*)$/.exec(failure);
  if (initError !== null)
    return { summary: `the server refused the MCP initialize request: ${initError[1]}`, hint: undefined };
  const exited = /^server exited \((.*)\)$/.exec(failure);
  if (exited !== null) return { summary: `the server exited (${exited[1]})`, hint: undefined };
  return { summary: failure, hint: undefined };
}

/**
 * Folders the server was given as arguments that its sandbox hid (the runtime's
 * `[skep] sandbox: <path> (an argument) is not visible` lines): the usual reason a file server
 * finds nothing.
 */
function hiddenArguments(log: string): string[] {
  const found = new Set<string>();
  for (const m of log.matchAll(/^\[skep\] sandbox: (.+) \(an argument\) is not visible/gm))
    found.add(m[1] as string);
  return [...found];
}

/**
 * Explains a failed start from the runner's status `context` and the server `log` (its tail).
 * `remote`: the workload proxies a remote URL (no server log of its own). When the sandbox hid
 * a folder the server was given, that leads, with the flag that grants it.
 */
export function explainStartFailure(context: string, log: string, remote: boolean): StartFailure {
  if (remote) return { summary: failureOf(context), evidence: [], hint: undefined };
  const explained = explainLocalFailure(context, log);
  const hidden = hiddenArguments(log);
  if (hidden.length === 0) return explained;
  return {
    summary: `its sandbox hid ${hidden.join(', ')} from it (${explained.summary})`,
    evidence: explained.evidence,
    hint: `grant ${hidden.length === 1 ? 'it' : 'them'}: skep run … ${hidden.map((h) => `--volume ${h}`).join(' ')} (add :ro for read-only)`,
  };
}

function explainLocalFailure(context: string, log: string): StartFailure {
  const failure = failureOf(context);
  const lines = lastAttemptLines(log);
  const npm = npmFailure(lines);
  if (npm !== undefined) return npm;
  const proxy = proxyFailure(failure);
  // The server's last words (a traceback's last line, an error it printed) say more than the
  // proxy can; they lead when the proxy only saw the program go away.
  const last = lines.at(-1);
  const wentAway = /exited before it answered|the server exited/.test(proxy.summary);
  return {
    summary:
      wentAway && last !== undefined ? `${proxy.summary}: ${last.trim().slice(0, 300)}` : proxy.summary,
    evidence: lines.slice(-5),
    hint: proxy.hint,
  };
}
