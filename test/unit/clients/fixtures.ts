/**
 * Per-client test data: a user-written config file in the client's own format (with comments
 * where the format allows them), and the exact entries ToolHive's client table says the
 * client expects for a streamable-HTTP and an SSE workload.
 */
import { type ParseError, parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { type ClientDefinition, type ClientType, clientDefinition } from '../../../src/clients/index.js';

export const W1_URL = 'http://localhost:4101/mcp';
export const W2_URL = 'http://localhost:4102/sse#w2';

type Entry = Record<string, unknown>;

const http = (url: string, type: string): Entry => ({ url, type });

/** [entry for w1 (streamable-http), entry for w2 (sse)] per client, from the reference table. */
export const EXPECTED: Record<ClientType, [Entry, Entry]> = {
  'roo-code': [http(W1_URL, 'streamable-http'), http(W2_URL, 'sse')],
  cline: [http(W1_URL, 'streamableHttp'), http(W2_URL, 'sse')],
  cursor: [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  'vscode-insider': [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  vscode: [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  'claude-code': [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  windsurf: [
    { serverUrl: W1_URL, type: 'http' },
    { serverUrl: W2_URL, type: 'sse' },
  ],
  'windsurf-jetbrains': [
    { serverUrl: W1_URL, type: 'http' },
    { serverUrl: W2_URL, type: 'sse' },
  ],
  'amp-cli': [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  'lm-studio': [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  goose: [
    { name: 'w1', enabled: true, type: 'streamable_http', uri: W1_URL, timeout: 60, description: '' },
    { name: 'w2', enabled: true, type: 'sse', uri: W2_URL, timeout: 60, description: '' },
  ],
  trae: [{ url: W1_URL }, { url: W2_URL }],
  continue: [
    { name: 'w1', type: 'streamable-http', url: W1_URL },
    { name: 'w2', type: 'sse', url: W2_URL },
  ],
  opencode: [
    { type: 'remote', url: W1_URL },
    { type: 'remote', url: W2_URL },
  ],
  kiro: [{ url: W1_URL }, { url: W2_URL }],
  antigravity: [{ serverUrl: W1_URL }, { serverUrl: W2_URL }],
  zed: [{ url: W1_URL }, { url: W2_URL }],
  'gemini-cli': [{ httpUrl: W1_URL }, { url: W2_URL }],
  'vscode-server': [{ url: W1_URL }, { url: W2_URL }],
  'mistral-vibe': [
    { name: 'w1', transport: 'streamable-http', url: W1_URL },
    { name: 'w2', transport: 'http', url: W2_URL },
  ],
  codex: [{ url: W1_URL }, { url: W2_URL }],
  'kimi-cli': [{ url: W1_URL }, { url: W2_URL }],
  factory: [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  'copilot-cli': [http(W1_URL, 'http'), http(W2_URL, 'sse')],
  qoder: [http(W1_URL, 'http'), http(W2_URL, 'sse')],
};

export interface Fixture {
  text: string;
  /** Comments that must survive every edit. */
  comments: string[];
}

/** A config file as a user would have it: other settings, one own server, comments if allowed. */
export function userFixture(def: ClientDefinition): Fixture {
  const layout = def.layout;
  if (def.format === 'json' || def.format === 'jsonc') {
    const key = JSON.stringify(layout.path[0]);
    if (def.format === 'json') {
      return {
        text: `{\n    "theme": "dark",\n    ${key}: {\n        "user-server": {\n            "command": "npx",\n            "args": ["-y", "thing"]\n        }\n    },\n    "zzz": 1\n}\n`,
        comments: [],
      };
    }
    return {
      text: `// user settings\n{\n\t"theme": "dark", /* keep this */\n\t${key}: {\n\t\t// my own server\n\t\t"user-server": { "command": "npx", "args": ["-y", "thing"] },\n\t},\n\t"zzz": 1\n}\n`,
      comments: ['// user settings', '/* keep this */', '// my own server'],
    };
  }
  if (layout.kind === 'yaml-map') {
    return {
      text: '# goose settings\nGOOSE_MODEL: gpt-4o # the model\nextensions:\n  developer:\n    bundled: true\n    enabled: true # builtin\n    name: developer\n    timeout: 300\n    type: builtin\n',
      comments: ['# goose settings', '# the model', '# builtin'],
    };
  }
  if (layout.kind === 'yaml-list') {
    return {
      text: '# continue config\nname: my assistant\nversion: 1.0.0\nmcpServers:\n  # user server\n  - name: user-server\n    command: npx\n    args:\n      - -y\n      - thing\n',
      comments: ['# continue config', '# user server'],
    };
  }
  if (layout.kind === 'toml-map') {
    return {
      text: '# codex settings\nmodel = "o3" # the model\n\n[mcp_servers.user-server]\ncommand = "npx"\nargs = ["-y", "thing"]\n\n# profiles\n[profiles.work]\nmodel = "gpt-5"\n',
      comments: ['# codex settings', '# the model', '# profiles'],
    };
  }
  return {
    text: '# vibe settings\nactive_model = "devstral"\n\n[[mcp_servers]]\nname = "user-server"\ntransport = "stdio"\ncommand = "npx" # user command\n\n[tools.bash]\npermission = "ask"\n',
    comments: ['# vibe settings', '# user command'],
  };
}

/** Parses a config file with a real parser of its format (strict JSON for plain JSON clients). */
export function parseWithRealParser(def: ClientDefinition, text: string): Record<string, unknown> {
  switch (def.format) {
    case 'json':
      return JSON.parse(text) as Record<string, unknown>;
    case 'jsonc': {
      const errors: ParseError[] = [];
      const value = parseJsonc(text, errors, { allowTrailingComma: true }) as Record<string, unknown>;
      if (errors.length > 0) throw new Error(`JSONC parse errors: ${JSON.stringify(errors)}`);
      return value;
    }
    case 'yaml':
      return parseYaml(text) as Record<string, unknown>;
    case 'toml':
      // smol-toml returns null-prototype objects; compare as plain data.
      return JSON.parse(JSON.stringify(parseToml(text))) as Record<string, unknown>;
  }
}

/** The server entries of a parsed config, by name. */
export function serversOf(type: ClientType, data: Record<string, unknown>): Record<string, unknown> {
  const def = clientDefinition(type);
  const key = def.layout.path[0]!;
  const node = data[key];
  if (node === undefined) return {};
  if (def.layout.kind === 'yaml-list' || def.layout.kind === 'toml-list') {
    const out: Record<string, unknown> = {};
    for (const item of node as Entry[]) out[item['name'] as string] = item;
    return out;
  }
  return node as Record<string, unknown>;
}

/** The user's own server entry as the fixture holds it. */
export function userServer(def: ClientDefinition): Record<string, unknown> {
  if (def.layout.kind === 'yaml-map') {
    return { bundled: true, enabled: true, name: 'developer', timeout: 300, type: 'builtin' };
  }
  if (def.layout.kind === 'toml-list') return { name: 'user-server', transport: 'stdio', command: 'npx' };
  if (def.layout.kind === 'yaml-list') return { name: 'user-server', command: 'npx', args: ['-y', 'thing'] };
  return { command: 'npx', args: ['-y', 'thing'] };
}

export function userServerName(def: ClientDefinition): string {
  return def.layout.kind === 'yaml-map' ? 'developer' : 'user-server';
}
