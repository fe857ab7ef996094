/**
 * Groups of the built-in catalog: servers that are commonly used together, installed in one
 * step (ToolHive Studio's "Install group" creates a Skep group of the same name and one
 * workload per member). Members are full names of `servers.ts` entries; the catalog test
 * checks that each one exists.
 */
import type { RegistryGroup } from '../../schemas/registry/index.js';

export const BUILTIN_GROUPS: readonly RegistryGroup[] = [
  {
    name: 'starter',
    description:
      'Servers that need no account or API key: fetch web pages, tell the time, keep a memory graph, think step by step.',
    servers: [
      'io.github.modelcontextprotocol/fetch',
      'io.github.modelcontextprotocol/time',
      'io.github.modelcontextprotocol/memory',
      'io.github.modelcontextprotocol/sequential-thinking',
    ],
  },
  {
    name: 'web-research',
    description: 'Search the web, scrape and crawl sites, and ask for answers with sources.',
    servers: [
      'io.github.modelcontextprotocol/fetch',
      'io.github.brave/brave-search',
      'io.github.firecrawl/firecrawl',
      'io.github.ppl-ai/perplexity',
    ],
  },
  {
    name: 'coding',
    description:
      'Work on code: local git history, GitHub repositories and issues, and current library documentation.',
    servers: [
      'io.github.modelcontextprotocol/git',
      'io.github.github/github',
      'io.github.upstash/context7',
      'com.devin/deepwiki',
    ],
  },
  {
    name: 'databases',
    description: 'Query and manage databases: SQLite files, PostgreSQL, MongoDB, Elasticsearch and Supabase.',
    servers: [
      'io.github.modelcontextprotocol/sqlite',
      'io.github.modelcontextprotocol/postgres',
      'io.github.mongodb-js/mongodb',
      'io.github.elastic/elasticsearch',
      'io.github.supabase-community/supabase',
    ],
  },
  {
    name: 'cloudflare',
    description: "Cloudflare's hosted servers: documentation, Workers bindings, observability and Radar.",
    servers: [
      'com.cloudflare/cloudflare-docs',
      'com.cloudflare/cloudflare-bindings',
      'com.cloudflare/cloudflare-observability',
      'com.cloudflare/cloudflare-radar',
    ],
  },
];
