/**
 * How `call_tool`'s arguments name the inner call: `tool_name` and `parameters` (absent or
 * null: none), a `tool_name` nested in `parameters` hoisted out as the reference does. One
 * parser for both readers: the runner's middleware, which rewrites the call into the inner
 * tool's `tools/call` before authorization, and the optimizer, which answers what the
 * middleware left alone. Were they to differ, a call one accepts and the other does not would
 * reach the inner tool without the pipeline having seen its name.
 */
export const FIND_TOOL_NAME = 'find_tool';
export const CALL_TOOL_NAME = 'call_tool';

export type CallToolArguments =
  | { readonly ok: true; readonly name: string; readonly parameters: Record<string, unknown> }
  | { readonly ok: false; readonly error: string };

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** `call_tool`'s `tool_name` and `parameters`, checked; the error says what is wrong. */
export function parseCallToolArguments(args: unknown): CallToolArguments {
  if (!isPlainObject(args))
    return {
      ok: false,
      error: `${CALL_TOOL_NAME} arguments must be an object with tool_name and parameters (got ${typeName(args)})`,
    };
  let parameters: unknown = args['parameters'];
  if (parameters === undefined || parameters === null) parameters = {};
  if (!isPlainObject(parameters))
    return {
      ok: false,
      error: `parameters must be an object holding the tool's arguments (got ${typeName(parameters)}); use {} for none`,
    };
  let name: unknown = args['tool_name'];
  if (name === undefined && typeof parameters['tool_name'] === 'string') {
    name = parameters['tool_name'];
    const rest: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(parameters)) if (k !== 'tool_name') rest[k] = v;
    parameters = rest;
  }
  if (typeof name !== 'string' || name === '')
    return {
      ok: false,
      error:
        name === undefined
          ? `tool_name is required: the exact name of a tool from ${FIND_TOOL_NAME}`
          : `tool_name must be a non-empty string (got ${typeName(name)})`,
    };
  return { ok: true, name, parameters: parameters as Record<string, unknown> };
}
