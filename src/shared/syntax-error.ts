/**
 * Where a JSON or YAML text failed to parse, said without quoting it. The parsers' own
 * messages repeat the text: V8's `JSON.parse` its first bytes (`Unexpected token 'r',
 * "root:*:202"... is not valid JSON` for /etc/shadow), the yaml package the offending line.
 * A file Skep was pointed at (an API request's `authz_config`, a registry's `local_path`) may
 * be any file the server can read, and an error is an answer to whoever pointed at it.
 */

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  return `line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
}

/** `syntax error at line L, column C` for a `JSON.parse(text)` failure (the position when V8 gives one). */
export function jsonSyntaxError(text: string, err: unknown): string {
  const position = /at position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1];
  if (text.trim() === '') return 'syntax error: the text is empty';
  return position === undefined ? 'syntax error' : `syntax error at ${lineAndColumn(text, Number(position))}`;
}

/** `syntax error (CODE) at line L, column C` for a failure of the yaml package's `parse`. */
export function yamlSyntaxError(err: unknown): string {
  const { code, linePos } = (err ?? {}) as { code?: unknown; linePos?: Array<{ line: number; col: number }> };
  const at = linePos?.[0];
  return `syntax error${typeof code === 'string' ? ` (${code})` : ''}${at === undefined ? '' : ` at line ${at.line}, column ${at.col}`}`;
}
