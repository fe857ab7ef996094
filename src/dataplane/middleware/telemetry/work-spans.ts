/**
 * Spans of work a request does inside the proxy's process besides being forwarded (a virtual
 * MCP server's composite tool: the run, its elicitation and forEach steps). Each is an
 * INTERNAL span, a child of the request's SERVER span or of another such span, with attributes
 * and a status, exported with the request's spans.
 *
 * The telemetry stage binds a `tools/call` it traces to its span (`bindRequestSpan`);
 * `requestSpan` finds it. Without telemetry, or for a request it does not trace, `requestSpan`
 * gives `NO_SPAN`, whose children run their work and record nothing. This module holds no
 * recorder and imports none (`spans.ts` does the recording), so code that may trace loads it
 * at no cost when nothing is traced.
 */

export type SpanAttributeValue = string | number | boolean;

/** A span around a unit of work; `run` opens a child of it. */
export interface WorkSpan {
  /** W3C `traceparent` of this span, for calls made inside it; undefined when nothing is traced. */
  readonly traceparent: string | undefined;
  /** Adds (or replaces) an attribute, written when the span ends. */
  set(key: string, value: SpanAttributeValue): void;
  /** Ends the span with status Error and `message`, even though its work returns. */
  fail(message: string): void;
  /**
   * Runs `work` inside a child span named `name`: Ok when it resolves (unless `fail` was
   * called), Error with the rejection's message when it rejects.
   */
  run<T>(
    name: string,
    attributes: Readonly<Record<string, SpanAttributeValue>>,
    work: (span: WorkSpan) => Promise<T>,
  ): Promise<T>;
}

/** The span of untraced work: its children run their work and record nothing. */
export const NO_SPAN: WorkSpan = {
  traceparent: undefined,
  set: () => undefined,
  fail: () => undefined,
  run: (_name, _attributes, work) => work(NO_SPAN),
};

/** Where a request keeps its span: the proxy's request context (`ProxyRequestContext.workSpan`). */
export interface SpanHolder {
  workSpan: object | undefined;
}

/**
 * Called by the telemetry stage: `request`'s work spans are children of `span`. Kept on the
 * request, not in a weak map keyed by it: a weak map's entry of every short-lived request
 * would be an ephemeron that each young-generation collection has to process.
 */
export function bindRequestSpan(request: SpanHolder, span: WorkSpan): void {
  request.workSpan = span;
}

/** The span under which work done for `request` (a proxied request's context) is traced. */
export function requestSpan(request: SpanHolder): WorkSpan {
  return (request.workSpan as WorkSpan | undefined) ?? NO_SPAN;
}
