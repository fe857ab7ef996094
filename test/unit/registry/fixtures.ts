/**
 * Generated registry documents for tests and the benchmark: deterministic (seeded PRNG),
 * a mix of OCI, npm and remote servers, with words drawn from a small vocabulary so that
 * searches have many, few and no matches.
 */
import type { CatalogServer, CatalogSkill, RegistryDocument } from '../../../src/registry/index.js';

export const WORDS = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'search',
  'files',
  'git',
  'cloud',
  'data',
  'browser',
  'chat',
  'mail',
  'maps',
  'notes',
  'tasks',
  'metrics',
  'logs',
  'queue',
  'cache',
  'vector',
];

/** mulberry32: a tiny deterministic PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generateServer(i: number, rand: () => number): CatalogServer {
  const pick = () => WORDS[Math.floor(rand() * WORDS.length)]!;
  const ns = `io.example.${pick()}${i % 97}`;
  const short = `${pick()}-${pick()}-${i}`;
  const name = `${ns}/${short}`;
  const description = `Server ${i} for ${pick()} and ${pick()} work`;
  const ext = {
    status: 'active',
    tier: 'Community',
    tools: [`${pick()}_get`, `${pick()}_put`],
    tags: [pick()],
  };
  const kind = i % 3;
  if (kind === 2) {
    const url = `https://mcp.example.com/${i}/mcp`;
    return {
      name,
      description,
      version: '1.0.0',
      remotes: [{ type: 'streamable-http', url, headers: [{ name: 'Authorization', isSecret: true }] }],
      _meta: {
        'io.modelcontextprotocol.registry/publisher-provided': { 'io.github.stacklok': { [url]: ext } },
      },
    };
  }
  const identifier = kind === 0 ? `ghcr.io/example/server-${i}:1.${i % 10}` : `@example/server-${i}`;
  return {
    name,
    description,
    version: '1.0.0',
    repository: { url: `https://github.com/example/server-${i}`, source: 'github' },
    packages: [
      {
        registryType: kind === 0 ? 'oci' : 'npm',
        identifier,
        transport: { type: 'stdio' },
        environmentVariables: [{ name: 'API_TOKEN', description: 'token', isRequired: true, isSecret: true }],
      },
    ],
    _meta: {
      'io.modelcontextprotocol.registry/publisher-provided': { 'io.github.stacklok': { [identifier]: ext } },
    },
  };
}

export function generateSkill(i: number, rand: () => number): CatalogSkill {
  const w = WORDS[Math.floor(rand() * WORDS.length)]!;
  return {
    namespace: `io.example.${w}`,
    name: `${w}-skill-${i}`,
    description: `Skill ${i} about ${WORDS[i % WORDS.length]}`,
    version: '1.0.0',
    packages: [{ registryType: 'git', url: `https://github.com/example/skills`, subfolder: `skills/${i}` }],
  };
}

export function generateDocument(servers: number, skills = 0, seed = 42): RegistryDocument {
  const rand = prng(seed);
  return {
    version: '1.0.0',
    meta: { last_updated: '2026-01-01T00:00:00Z' },
    data: {
      servers: Array.from({ length: servers }, (_, i) => generateServer(i, rand)),
      skills: Array.from({ length: skills }, (_, i) => generateSkill(i, rand)),
    },
  };
}
