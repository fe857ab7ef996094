/**
 * The one validation library for every `skep.dev/v1beta1` kind, shared by the admission
 * webhook, the controller and `skep operator validate -f`. For
 * MCPExternalAuthConfig it is `validateExtAuthConfig`; for the workload kinds the same three
 * layers: structure (ajv over the TypeBox schema, with defaults applied to a copy) plus
 * unknown fields, the CEL rules carried by the schema (evaluated with cel-js as in the CRD),
 * and rules that need code (names that fit the derived objects, private remote hosts).
 * Every problem names the field path.
 */
import { isIP } from 'node:net';
import { createValidator, type Validator } from '../../validation/index.js';
import { EXTAUTH_API_VERSION, EXTAUTH_KIND } from '../../schemas/extauth/index.js';
import { type KindDefinition, NAME_PATTERN } from '../../schemas/workloads/index.js';
import { OPERATOR_KINDS } from '../../schemas/operator/index.js';
import { evaluateCelRules } from './cel-rules.js';
import { sharedConfigProblems } from './shared-refs.js';
import { type Problem, validateExtAuthConfig } from './validate.js';
import { isRecord } from '../../shared/index.js';
import { at, recordAt } from './json-fields.js';
import { endpointPrefixProblem } from '../../dataplane/proxy/index.js';

type Node = Record<string, unknown>;

const validators = new Map<string, Validator<KindDefinition['object']>>();
function validatorOf(def: KindDefinition): Validator<KindDefinition['object']> {
  let v = validators.get(def.kind);
  if (v === undefined) {
    v = createValidator(def.object);
    validators.set(def.kind, v);
  }
  return v;
}

/** The definition of a workload kind, or undefined. */
export function kindDefinition(kind: unknown): KindDefinition | undefined {
  return OPERATOR_KINDS.find((k) => k.kind === kind);
}

export const SUPPORTED_KINDS = [EXTAUTH_KIND, ...OPERATOR_KINDS.map((k) => k.kind)];

function fromAjv(text: string): Problem {
  const at = text.indexOf(': ');
  const raw = at < 0 ? '' : text.slice(0, at);
  const message = at < 0 ? text : text.slice(at + 2);
  return { path: raw === '(root)' ? '' : raw.replace(/\.(\d+)(?=\.|$)/g, '[$1]'), message };
}

/** Fields the schema does not know (kubectl's strict field validation); raw objects are skipped. */
function unknownFields(schema: unknown, value: unknown, path: string, out: Problem[]): void {
  if (!isRecord(schema) || schema['x-kubernetes-preserve-unknown-fields'] === true) return;
  if (isRecord(value)) {
    const props = schema['properties'];
    const extra = schema['additionalProperties'];
    if (isRecord(props) && path !== 'metadata') {
      for (const key of Object.keys(value)) {
        const sub = props[key];
        const child = path === '' ? key : `${path}.${key}`;
        if (sub !== undefined) unknownFields(sub, value[key], child, out);
        else if (!isRecord(extra)) out.push({ path: child, message: 'is not a known field' });
      }
    } else if (isRecord(schema['patternProperties'])) {
      const [only] = Object.values(schema['patternProperties']);
      if (isRecord(only))
        for (const [k, v] of Object.entries(value)) unknownFields(only, v, `${path}.${k}`, out);
    }
  } else if (Array.isArray(value) && isRecord(schema['items'])) {
    for (const [i, v] of value.entries()) unknownFields(schema['items'], v, `${path}[${i}]`, out);
  }
}

/** Private, loopback, link-local or unspecified IP literal (what allowPrivateEndpoint guards). */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === 'kubernetes.default' || host.startsWith('kubernetes.default.')) return true;
  const kind = isIP(host);
  if (kind === 4) {
    const [a = 0, b = 0] = host.split('.').map(Number);
    return (
      a === 10 ||
      a === 127 ||
      a === 0 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254) ||
      (a === 100 && b >= 64 && b <= 127)
    );
  }
  if (kind === 6) {
    return (
      host === '::1' ||
      host === '::' ||
      host.startsWith('fc') ||
      host.startsWith('fd') ||
      host.startsWith('fe8') ||
      host.startsWith('fe9') ||
      host.startsWith('fea') ||
      host.startsWith('feb') ||
      host.startsWith('::ffff:')
    );
  }
  return false;
}

/** Kinds whose name becomes the name of rendered objects (so it must be a DNS label). */
const RENDERS_OBJECTS = new Set([
  'MCPServer',
  'MCPRemoteProxy',
  'VirtualMCPServer',
  'MCPRegistry',
  'EmbeddingServer',
]);

function codeRules(kind: string, obj: Node, out: Problem[]): void {
  const meta = recordAt(obj, 'metadata');
  const name = meta['name'];
  // Service `mcp-<n>-remote-proxy` must be a DNS-1035 label of at most 63 characters.
  const maxName =
    kind === 'MCPRemoteProxy'
      ? 63 - 'mcp--remote-proxy'.length
      : kind === 'MCPServer'
        ? 63 - 'mcp--proxy'.length
        : kind === 'MCPRegistry'
          ? 63 - '-registry-server-config'.length
          : 63;
  if (typeof name === 'string' && RENDERS_OBJECTS.has(kind)) {
    if (!new RegExp(NAME_PATTERN).test(name))
      out.push({
        path: 'metadata.name',
        message: 'must be lowercase letters, digits and hyphens (a DNS label)',
      });
    else if (name.length > maxName)
      out.push({
        path: 'metadata.name',
        message: `is ${name.length} characters; at most ${maxName} so that the derived Service name fits 63`,
      });
  }
  const spec = obj['spec'];
  if (!isRecord(spec)) return;
  out.push(...sharedConfigProblems(kind, spec));
  if ((kind === 'MCPRemoteProxy' || kind === 'MCPServerEntry') && typeof spec['remoteUrl'] === 'string') {
    let url: URL | undefined;
    try {
      url = new URL(spec['remoteUrl']);
    } catch {
      out.push({ path: 'spec.remoteUrl', message: 'must be an absolute http(s) URL' });
    }
    if (url !== undefined && spec['allowPrivateEndpoint'] !== true && isPrivateHost(url.hostname)) {
      out.push({
        path: 'spec.remoteUrl',
        message: `host ${url.hostname} is a private, loopback or link-local address; set allowPrivateEndpoint: true to allow it`,
      });
    }
  }
  if (kind === 'MCPServer' || kind === 'MCPRemoteProxy') {
    const problem = endpointPrefixProblemOf(kind, spec);
    if (problem !== undefined) out.push({ path: 'spec.endpointPrefix', message: problem });
  }
  const headers = at(spec, 'headerForward', 'addHeadersFromSecret');
  if (Array.isArray(headers)) {
    const seen = new Set<string>();
    headers.forEach((h: unknown, i) => {
      const n = String(at(h, 'headerName') ?? '').toLowerCase();
      if (seen.has(n))
        out.push({
          path: `spec.headerForward.addHeadersFromSecret[${i}].headerName`,
          message: `duplicate header ${n}`,
        });
      seen.add(n);
    });
  }
  if (kind === 'MCPServer' && Array.isArray(spec['secrets'])) {
    const names = new Set<string>();
    spec['secrets'].forEach((s: unknown, i) => {
      const env = String(at(s, 'targetEnvName') ?? at(s, 'key') ?? '');
      if (names.has(env))
        out.push({
          path: `spec.secrets[${i}]`,
          message: `environment variable ${env} is set by an earlier secret`,
        });
      names.add(env);
    });
  }
}

/** The API group of Skep's own kinds (`skep.dev/v1beta1`). */
export const SKEP_GROUP = 'skep.dev';

/**
 * Why a document is not Skep's to validate or render, or `undefined` when it is: a resource of
 * another API group (`v1` Namespace, `apps/v1` StatefulSet, another operator's kind…), as a
 * manifest that deploys a workload together with what it needs holds. A document without an
 * `apiVersion` is Skep's (and then reported invalid by `validateResource`).
 */
export function foreignResource(doc: unknown): string | undefined {
  if (!isRecord(doc) || typeof doc['apiVersion'] !== 'string') return undefined;
  return doc['apiVersion'].startsWith(`${SKEP_GROUP}/`) ? undefined : `not a ${SKEP_GROUP} resource`;
}

export interface ResourceValidation {
  problems: Problem[];
  /** The resource with schema defaults applied (a copy); present only when valid. */
  resource?: Node;
}

/** Offline validation of any `skep.dev/v1beta1` resource (structure, CEL rules, code rules). */
export function validateResource(input: unknown): ResourceValidation {
  if (!isRecord(input)) return { problems: [{ path: '', message: 'must be an object' }] };
  const kind = input['kind'];
  if (kind === EXTAUTH_KIND) {
    const r = validateExtAuthConfig(input);
    return r.resource === undefined ? { problems: r.problems } : { problems: [], resource: r.resource };
  }
  const def = kindDefinition(kind);
  if (def === undefined) {
    return {
      problems: [
        {
          path: 'kind',
          message: `must be one of ${SUPPORTED_KINDS.join(', ')} (got ${JSON.stringify(kind)})`,
        },
      ],
    };
  }
  if (input['apiVersion'] !== EXTAUTH_API_VERSION)
    return { problems: [{ path: 'apiVersion', message: `must be ${EXTAUTH_API_VERSION}` }] };
  const copy = structuredClone(input);
  const problems: Problem[] = [];
  unknownFields(def.object, copy, '', problems);
  problems.push(...validatorOf(def).problems(copy).map(fromAjv));
  problems.push(...evaluateCelRules(def.object, copy));
  try {
    codeRules(def.kind, copy, problems);
  } catch {
    // Only a structurally broken value makes the code rules throw; reported above.
  }
  return problems.length > 0 ? { problems } : { problems, resource: copy };
}

/**
 * `endpointPrefix` becomes the run configuration's `endpoint_prefix`: the runner puts it before
 * the URL of its SSE `endpoint` event (an ingress that strips the prefix). The runner's own rules:
 * a URL path, and a workload whose runner serves the SSE transport (a stdio server, or a server
 * of the SSE transport) — a streamable-HTTP one has no endpoint event, so the field would be
 * ignored; it is refused at admission instead of when the pod starts.
 */
function endpointPrefixProblemOf(kind: string, spec: Record<string, unknown>): string | undefined {
  const prefix = spec['endpointPrefix'];
  if (typeof prefix !== 'string' || prefix === '') return undefined;
  const problem = endpointPrefixProblem(prefix);
  if (problem !== undefined) return problem;
  // MCPRemoteProxy's transport defaults to streamable-http; MCPServer's to stdio.
  const transport = spec['transport'] ?? (kind === 'MCPRemoteProxy' ? 'streamable-http' : 'stdio');
  return transport === 'streamable-http'
    ? 'has no effect with transport streamable-http: it prefixes the URL of the SSE endpoint event, and a streamable-HTTP server is served at /mcp only; remove it'
    : undefined;
}
