/**
 * Applies the detectors to a message: every string of a tool result, resource read or prompt
 * result (and of a JSON-RPC error's message and data), or of a call's `arguments`, is scanned
 * where it lies; nothing is re-serialised. Binary payloads are skipped (`data` of image and
 * audio content, `blob` of resource contents: base64 of bytes, not text), as are `mimeType`s.
 *
 * Per match the detector's action decides: `block` stops the walk (the caller turns the
 * answer into an error naming the detector), `redact` replaces the span with
 * `[REDACTED:<kind>]` in the string (so structured content stays valid JSON of the same
 * shape), `audit` only records. Findings are counted per detector and kind; the matched text
 * is never kept.
 */
import type { GuardrailAction } from '../../../schemas/validators/index.js';
import type { EffectiveGuardrails } from './config.js';
import {
  anyOf,
  CredentialsDetector,
  type Detector,
  type DetectorName,
  type Match,
  OwnSecretsDetector,
  PersonalDataDetector,
  PromptInjectionDetector,
} from './detectors.js';

export type Direction = 'results' | 'arguments';

export interface Finding {
  readonly detector: DetectorName;
  readonly kind: string;
  readonly action: GuardrailAction;
  readonly count: number;
  /** For `ownSecrets`: the secret's name. */
  readonly secret?: string;
}

export interface Inspection {
  /** The first match whose action is `block` (the walk stopped there). */
  blocked?: { detector: DetectorName; kind: string };
  /** Whether a string was redacted. */
  changed: boolean;
  findings: Finding[];
}

/** The detectors that act on one direction, with their actions. */
export interface Plan {
  readonly detectors: readonly Detector[];
  readonly actions: ReadonlyMap<DetectorName, GuardrailAction>;
  /**
   * When every detector has literal hints: an expression that finds, in a message's JSON
   * text, each hint as JSON writes it, and the two escapes that can spell a character
   * otherwise (`\u` and `\/`). A text it does not match has no string any detector can
   * match (`mayMatch`). Undefined when a detector can match any text.
   */
  readonly textFilter: RegExp | undefined;
}

/**
 * The hints as they appear in JSON text: JSON.stringify escapes character by character
 * (`"`, `\`, control characters), so a string containing a hint is written with the hint's
 * escaped form in it, unless the writer chose `\uXXXX` or `\/` for one of its characters,
 * which the filter also looks for (RFC 8259 §7: these are the only other spellings).
 */
function textFilterOf(detectors: readonly Detector[]): RegExp | undefined {
  const literals: string[] = ['\\u', '\\/'];
  for (const d of detectors) {
    if (d.hints === undefined) return undefined;
    for (const hint of d.hints) literals.push(JSON.stringify(hint).slice(1, -1));
  }
  return anyOf(literals);
}

/**
 * False when `text`, the JSON text of a message, has no string any of the plan's detectors
 * can match: the message need not be parsed or walked.
 */
export function mayMatch(plan: Plan, text: string): boolean {
  return plan.textFilter === undefined || plan.textFilter.test(text);
}

class Blocked {
  constructor(readonly match: Match) {}
}

/** The plan for `direction`, or undefined when every detector is off there. */
export function planFor(
  config: EffectiveGuardrails,
  direction: Direction,
  secrets: ReadonlyMap<string, string>,
): Plan | undefined {
  const detectors: Detector[] = [];
  const actions = new Map<DetectorName, GuardrailAction>();
  const use = (name: DetectorName, make: () => Detector | undefined): void => {
    const action = config[name][direction];
    if (action === 'off') return;
    const detector = make();
    if (detector === undefined) return;
    detectors.push(detector);
    actions.set(name, action);
  };
  use('ownSecrets', () => {
    const d = new OwnSecretsDetector(secrets);
    return d.size === 0 ? undefined : d;
  });
  use('credentials', () =>
    config.credentials.patterns.length === 0
      ? undefined
      : new CredentialsDetector(config.credentials.patterns),
  );
  use('personalData', () =>
    config.personalData.kinds.length === 0 ? undefined : new PersonalDataDetector(config.personalData.kinds),
  );
  use('promptInjection', () =>
    config.promptInjection.phrases.length === 0
      ? undefined
      : new PromptInjectionDetector(config.promptInjection.phrases),
  );
  return detectors.length === 0 ? undefined : { detectors, actions, textFilter: textFilterOf(detectors) };
}

function marker(match: Match): string {
  return `[REDACTED:${match.detector === 'promptInjection' ? 'prompt_injection' : match.detector === 'ownSecrets' ? 'secret' : match.kind}]`;
}

class Walk {
  readonly findings = new Map<string, { finding: Omit<Finding, 'count'>; count: number }>();
  changed = false;
  readonly #matches: Match[] = [];

  constructor(readonly plan: Plan) {}

  /** The string after the plan's actions (the same string when nothing is redacted). */
  text(value: string): string {
    const matches = this.#matches;
    matches.length = 0;
    for (const detector of this.plan.detectors) detector.scan(value, matches);
    if (matches.length === 0) return value;
    const redact: Match[] = [];
    for (const m of matches) {
      const action = this.plan.actions.get(m.detector) ?? 'off';
      const key = `${m.detector}\u0000${m.kind}\u0000${m.secret ?? ''}\u0000${action}`;
      const seen = this.findings.get(key);
      if (seen === undefined)
        this.findings.set(key, {
          finding: {
            detector: m.detector,
            kind: m.kind,
            action,
            ...(m.secret === undefined ? {} : { secret: m.secret }),
          },
          count: 1,
        });
      else seen.count++;
      if (action === 'block') throw new Blocked(m);
      if (action === 'redact') redact.push(m);
    }
    if (redact.length === 0) return value;
    redact.sort((a, b) => a.start - b.start || b.end - a.end);
    const parts: string[] = [];
    let at = 0;
    for (const m of redact) {
      if (m.end <= at) continue;
      if (m.start >= at) {
        parts.push(value.slice(at, m.start), marker(m));
      }
      // An overlapping match extends the span already replaced.
      at = m.end;
    }
    parts.push(value.slice(at));
    this.changed = true;
    return parts.join('');
  }

  node(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.text(value);
    if (value === null || typeof value !== 'object' || depth > 256) return value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item === null || (typeof item !== 'object' && typeof item !== 'string')) continue;
        const next = this.node(item, depth + 1);
        if (next !== item) value[i] = next;
      }
      return value;
    }
    const record = value as Record<string, unknown>;
    const type = record['type'];
    const binary = type === 'image' || type === 'audio';
    for (const key of Object.keys(record)) {
      if (key === 'mimeType' || key === 'blob' || (binary && key === 'data')) continue;
      const item = record[key];
      if (item === null || (typeof item !== 'object' && typeof item !== 'string')) continue;
      const next = this.node(item, depth + 1);
      if (next !== item) record[key] = next;
    }
    return value;
  }

  inspection(blocked?: Match): Inspection {
    const findings = [...this.findings.values()].map(({ finding, count }) => ({ ...finding, count }));
    return {
      changed: this.changed,
      findings,
      ...(blocked === undefined ? {} : { blocked: { detector: blocked.detector, kind: blocked.kind } }),
    };
  }
}

/**
 * Inspects `value` in place (strings inside objects and arrays are replaced when redacted);
 * returns the new value (differs only when `value` itself is a redacted string).
 */
export function inspect(plan: Plan, value: unknown): { value: unknown; inspection: Inspection } {
  const walk = new Walk(plan);
  try {
    const next = walk.node(value, 0);
    return { value: next, inspection: walk.inspection() };
  } catch (err) {
    if (err instanceof Blocked) return { value, inspection: walk.inspection(err.match) };
    throw err;
  }
}
