/**
 * The client types and the clients' wire objects (ToolHive's `/api/v1beta/clients`), in a module
 * that imports nothing: the web UI's browser type check reads them from here (src/control/ui/types.ts). The
 * order of `CLIENT_TYPES` is the fixed discovery order.
 */

export const CLIENT_TYPES = [
  'roo-code',
  'cline',
  'cursor',
  'vscode-insider',
  'vscode',
  'claude-code',
  'windsurf',
  'windsurf-jetbrains',
  'amp-cli',
  'lm-studio',
  'goose',
  'trae',
  'continue',
  'opencode',
  'kiro',
  'antigravity',
  'zed',
  'gemini-cli',
  'vscode-server',
  'mistral-vibe',
  'codex',
  'kimi-cli',
  'factory',
  'copilot-cli',
  'qoder',
] as const;

export type ClientType = (typeof CLIENT_TYPES)[number];

/** `GET /api/v1beta/discovery/clients`: one a client type, in `CLIENT_TYPES` order. */
export interface ClientStatus {
  client_type: ClientType;
  installed: boolean;
  registered: boolean;
  supports_skills: boolean;
}

/** `GET /api/v1beta/clients`: a registered client and its groups. */
export interface ClientRegistration {
  name: string;
  groups: string[];
}
