/**
 * The client catalog: every MCP client application Skep can register with, where its MCP
 * configuration file lives on each OS, how the servers are laid out in that file and which
 * entry shape it expects. Facts from ToolHive's table of supported clients; the order of
 * `CLIENT_TYPES` (wire.ts) is the fixed order of ToolHive's `GET /api/v1beta/discovery/clients`.
 *
 * Paths are resolved at call time from an environment (HOME, APPDATA, XDG_CONFIG_HOME) so a
 * test, or a CLI run for another user, can point every client at a temporary home.
 */
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { definedOnly, splitAccessToken } from '../shared/index.js';
import { CLIENT_TYPES, type ClientType } from '../schemas/clients/index.js';

/** The transport a client reaches a Skep proxy with (stdio servers are served through their proxy mode). */
export type ClientTransport = 'sse' | 'streamable-http';

export type ConfigFormat = 'json' | 'jsonc' | 'yaml' | 'toml';

/** Where the MCP servers live inside the file. */
export type ServersLayout =
  /** An object keyed by server name, at a key path (JSON/JSONC). */
  | { readonly kind: 'json-map'; readonly path: readonly string[] }
  /** A mapping keyed by server name (YAML). */
  | { readonly kind: 'yaml-map'; readonly path: readonly string[] }
  /** A sequence of mappings identified by their `name` field (YAML). */
  | { readonly kind: 'yaml-list'; readonly path: readonly string[] }
  /** Tables `[path.<name>]` (TOML). */
  | { readonly kind: 'toml-map'; readonly path: readonly string[] }
  /** An array of tables `[[path]]` identified by their `name` field (TOML). */
  | { readonly kind: 'toml-list'; readonly path: readonly string[] };

export type ServerEntry = Record<string, string | number | boolean | Readonly<Record<string, string>>>;

export interface ClientDefinition {
  readonly type: ClientType;
  readonly format: ConfigFormat;
  readonly layout: ServersLayout;
  /** Entry field that carries the URL (for gemini-cli it depends on the transport). */
  readonly urlField: string;
  /** The `type` value per transport, or undefined when the client takes no type field. */
  readonly typeValues: Readonly<Record<ClientTransport, string>> | undefined;
  readonly supportsSkills: boolean;
  readonly deprecated?: string;
  /** Absolute config file path for an environment and platform. */
  configPath(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string;
  /** What must exist for the client to count as installed (its config dir, or for claude-code the file). */
  detectPath(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string;
  /** Whether `detectPath` is a file (claude-code) rather than a directory. */
  readonly detectsFile: boolean;
  /** The client's own program, when it has a well-known name: found on PATH, it is installed. */
  readonly programs: readonly string[];
  /** User-scope skills directory, when the client supports skills. */
  skillsDir(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string | undefined;
  /** The entry written for one server. */
  entry(name: string, url: string, transport: ClientTransport): ServerEntry;
}

export function homeOf(env: NodeJS.ProcessEnv): string {
  const home = env['HOME'] ?? env['USERPROFILE'];
  return home !== undefined && home !== '' ? home : homedir();
}

/** The per-OS prefix of editor-style apps: XDG config on Linux, Application Support on macOS, Roaming on Windows. */
function appPrefix(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string {
  const home = homeOf(env);
  if (platform === 'darwin') return join(home, 'Library', 'Application Support');
  if (platform === 'win32') return nonEmpty(env['APPDATA']) ?? join(home, 'AppData', 'Roaming');
  return nonEmpty(env['XDG_CONFIG_HOME']) ?? join(home, '.config');
}

/** `~/.config` style location used by CLI tools on every Unix (XDG_CONFIG_HOME honoured). */
function dotConfig(env: NodeJS.ProcessEnv): string {
  return nonEmpty(env['XDG_CONFIG_HOME']) ?? join(homeOf(env), '.config');
}

function roaming(env: NodeJS.ProcessEnv): string {
  return nonEmpty(env['APPDATA']) ?? join(homeOf(env), 'AppData', 'Roaming');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value !== '' ? value : undefined;
}

type PathFn = (env: NodeJS.ProcessEnv, platform: NodeJS.Platform) => string;

const inHome =
  (...segments: string[]): PathFn =>
  (env) =>
    join(homeOf(env), ...segments);
const inApp =
  (...segments: string[]): PathFn =>
  (env, platform) =>
    join(appPrefix(env, platform), ...segments);
/** A settings file of a VS Code extension, kept in the editor's global storage under its id. */
const inVsCodeExtension = (extensionId: string, file: string): PathFn =>
  inApp('Code', 'User', 'globalStorage', extensionId, 'settings', file);
/** `~/.config/<segments>` on Unix, `%APPDATA%/<windows>` on Windows. */
const inDotConfig =
  (segments: string[], windows: string[] = segments): PathFn =>
  (env, platform) =>
    platform === 'win32' ? join(roaming(env), ...windows) : join(dotConfig(env), ...segments);

const HTTP_TYPES = { sse: 'sse', 'streamable-http': 'http' } as const;

interface Spec {
  format: ConfigFormat;
  layout: ServersLayout;
  path: PathFn;
  urlField?: string;
  typeValues?: Readonly<Record<ClientTransport, string>>;
  /** User-scope skills dir relative to HOME (or a function), absent = no skills support. */
  skills?: string[] | PathFn;
  /** claude-code is detected by its settings file, not by a directory. */
  detectByFile?: boolean;
  /**
   * The client's entry for an HTTP server takes request headers (`headers`): the workload's
   * access token goes there as a bearer token, and the URL stays plain. Other clients get the
   * URL that carries it.
   */
  headers?: boolean;
  /** Program names that only this client installs (PATH lookup; Windows `.exe` not tried). */
  programs?: string[];
  deprecated?: string;
  entry?: (name: string, url: string, transport: ClientTransport, self: ClientDefinition) => ServerEntry;
}

const jsonMap = (...path: string[]): ServersLayout => ({ kind: 'json-map', path });
const MCP_SERVERS = jsonMap('mcpServers');
const AGENTS_SKILLS = ['.agents', 'skills'];

const SPECS: Record<ClientType, Spec> = {
  'roo-code': {
    format: 'json',
    layout: MCP_SERVERS,
    path: inVsCodeExtension('rooveterinaryinc.roo-cline', 'mcp_settings.json'),
    typeValues: { sse: 'sse', 'streamable-http': 'streamable-http' },
    skills: ['.roo', 'skills'],
    deprecated: 'roo-code is deprecated upstream; prefer cline',
  },
  cline: {
    format: 'json',
    layout: MCP_SERVERS,
    path: inVsCodeExtension('saoudrizwan.claude-dev', 'cline_mcp_settings.json'),
    typeValues: { sse: 'sse', 'streamable-http': 'streamableHttp' },
    skills: ['.cline', 'skills'],
  },
  cursor: {
    programs: ['cursor'],
    headers: true,
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.cursor', 'mcp.json'),
    typeValues: HTTP_TYPES,
    skills: ['.cursor', 'skills'],
  },
  'vscode-insider': {
    programs: ['code-insiders'],
    headers: true,
    format: 'jsonc',
    layout: jsonMap('servers'),
    path: inApp('Code - Insiders', 'User', 'mcp.json'),
    typeValues: HTTP_TYPES,
    skills: ['.copilot', 'skills'],
  },
  vscode: {
    programs: ['code'],
    headers: true,
    format: 'jsonc',
    layout: jsonMap('servers'),
    path: inApp('Code', 'User', 'mcp.json'),
    typeValues: HTTP_TYPES,
    skills: ['.copilot', 'skills'],
  },
  'claude-code': {
    programs: ['claude'],
    headers: true,
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.claude.json'),
    typeValues: HTTP_TYPES,
    skills: ['.claude', 'skills'],
    detectByFile: true,
  },
  windsurf: {
    programs: ['windsurf'],
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.codeium', 'windsurf', 'mcp_config.json'),
    urlField: 'serverUrl',
    typeValues: HTTP_TYPES,
    skills: ['.codeium', 'windsurf', 'skills'],
  },
  'windsurf-jetbrains': {
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.codeium', 'mcp_config.json'),
    urlField: 'serverUrl',
    typeValues: HTTP_TYPES,
  },
  'amp-cli': {
    format: 'json',
    // One literal top-level key that contains a dot, not a nested path.
    layout: jsonMap('amp.mcpServers'),
    path: inDotConfig(['amp', 'settings.json']),
    typeValues: HTTP_TYPES,
    skills: AGENTS_SKILLS,
  },
  'lm-studio': {
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.lmstudio', 'mcp.json'),
    typeValues: HTTP_TYPES,
  },
  goose: {
    format: 'yaml',
    layout: { kind: 'yaml-map', path: ['extensions'] },
    // On Windows goose keeps its config under %APPDATA%\Block\goose\config.
    path: inDotConfig(['goose', 'config.yaml'], ['Block', 'goose', 'config', 'config.yaml']),
    urlField: 'uri',
    typeValues: { sse: 'sse', 'streamable-http': 'streamable_http' },
    skills: AGENTS_SKILLS,
    entry: (name, url, transport, self) => ({
      name,
      enabled: true,
      type: self.typeValues![transport],
      uri: url,
      timeout: 60,
      description: '',
    }),
  },
  trae: {
    format: 'jsonc',
    layout: MCP_SERVERS,
    path: inApp('Trae', 'User', 'mcp.json'),
    skills: AGENTS_SKILLS,
  },
  continue: {
    format: 'yaml',
    layout: { kind: 'yaml-list', path: ['mcpServers'] },
    path: inHome('.continue', 'config.yaml'),
    typeValues: { sse: 'sse', 'streamable-http': 'streamable-http' },
    entry: (name, url, transport, self) => ({ name, type: self.typeValues![transport], url }),
  },
  opencode: {
    programs: ['opencode'],
    format: 'jsonc',
    layout: jsonMap('mcp'),
    path: (env, platform) =>
      platform === 'win32'
        ? join(homeOf(env), '.config', 'opencode', 'opencode.json')
        : join(dotConfig(env), 'opencode', 'opencode.json'),
    // opencode takes `remote` for every HTTP transport.
    typeValues: { sse: 'remote', 'streamable-http': 'remote' },
    skills: (env, platform) =>
      platform === 'win32'
        ? join(homeOf(env), 'opencode', 'skills')
        : join(homeOf(env), '.config', 'opencode', 'skills'),
    entry: (_name, url) => ({ type: 'remote', url }),
  },
  kiro: {
    programs: ['kiro'],
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.kiro', 'settings', 'mcp.json'),
    skills: ['.kiro', 'skills'],
  },
  antigravity: {
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.gemini', 'antigravity', 'mcp_config.json'),
    urlField: 'serverUrl',
    skills: AGENTS_SKILLS,
  },
  zed: {
    programs: ['zed', 'zeditor'],
    format: 'jsonc',
    layout: jsonMap('context_servers'),
    path: inDotConfig(['zed', 'settings.json'], ['Zed', 'settings.json']),
  },
  'gemini-cli': {
    programs: ['gemini'],
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.gemini', 'settings.json'),
    skills: AGENTS_SKILLS,
    // gemini-cli reads streamable HTTP from `httpUrl` and SSE from `url`.
    entry: (_name, url, transport): ServerEntry => (transport === 'sse' ? { url } : { httpUrl: url }),
  },
  'vscode-server': {
    format: 'jsonc',
    layout: jsonMap('servers'),
    path: inHome('.vscode-server', 'data', 'User', 'mcp.json'),
  },
  'mistral-vibe': {
    format: 'toml',
    layout: { kind: 'toml-list', path: ['mcp_servers'] },
    path: inHome('.vibe', 'config.toml'),
    // vibe names the legacy SSE transport `http`.
    typeValues: { sse: 'http', 'streamable-http': 'streamable-http' },
    skills: ['.vibe', 'skills'],
    entry: (name, url, transport, self) => ({ name, transport: self.typeValues![transport], url }),
  },
  codex: {
    programs: ['codex'],
    format: 'toml',
    layout: { kind: 'toml-map', path: ['mcp_servers'] },
    path: (env) => join(nonEmpty(env['CODEX_HOME']) ?? join(homeOf(env), '.codex'), 'config.toml'),
    skills: AGENTS_SKILLS,
  },
  'kimi-cli': {
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.kimi', 'mcp.json'),
    skills: ['.kimi', 'skills'],
  },
  factory: {
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.factory', 'mcp.json'),
    typeValues: HTTP_TYPES,
    skills: ['.factory', 'skills'],
  },
  'copilot-cli': {
    programs: ['copilot'],
    format: 'json',
    layout: MCP_SERVERS,
    path: inHome('.copilot', 'mcp-config.json'),
    typeValues: HTTP_TYPES,
  },
  qoder: {
    format: 'json',
    layout: MCP_SERVERS,
    path: (env, platform) =>
      platform === 'win32'
        ? join(roaming(env), 'Qoder', 'SharedClientCache', 'mcp.json')
        : join(homeOf(env), '.qoder', 'mcp.json'),
    typeValues: HTTP_TYPES,
    skills: ['.qoder', 'skills'],
  },
};

function define(type: ClientType, spec: Spec): ClientDefinition {
  const skills = spec.skills;
  const def: ClientDefinition = {
    type,
    format: spec.format,
    layout: spec.layout,
    urlField: spec.urlField ?? 'url',
    typeValues: spec.typeValues,
    supportsSkills: skills !== undefined,
    ...definedOnly({ deprecated: spec.deprecated }),
    configPath: spec.path,
    detectPath: (env, platform) =>
      spec.detectByFile === true ? spec.path(env, platform) : dirname(spec.path(env, platform)),
    detectsFile: spec.detectByFile === true,
    programs: Object.freeze([...(spec.programs ?? [])]),
    skillsDir: (env, platform) => {
      if (skills === undefined) return undefined;
      return typeof skills === 'function' ? skills(env, platform) : join(homeOf(env), ...skills);
    },
    entry: (name, url, transport) => {
      if (spec.entry !== undefined) return spec.entry(name, url, transport, def);
      const split = spec.headers === true ? splitAccessToken(url) : { url, token: undefined };
      const entry: ServerEntry = { [def.urlField]: split.url };
      if (def.typeValues !== undefined) entry['type'] = def.typeValues[transport];
      if (split.token !== undefined) entry['headers'] = { Authorization: `Bearer ${split.token}` };
      return entry;
    },
  };
  return Object.freeze(def);
}

export const CLIENTS: ReadonlyMap<ClientType, ClientDefinition> = new Map(
  CLIENT_TYPES.map((type) => [type, define(type, SPECS[type])]),
);

export function isClientType(value: string): value is ClientType {
  return CLIENTS.has(value as ClientType);
}

export function clientDefinition(type: ClientType): ClientDefinition {
  return CLIENTS.get(type)!;
}
