// oidc-provider 9 ships no type declarations; the tests use a small, explicitly typed part of it.
declare module 'oidc-provider' {
  import type { EventEmitter } from 'node:events';
  import type { IncomingMessage, ServerResponse } from 'node:http';
  /** An EventEmitter: `access_token.saved`, `grant.success`, ... */
  export default class Provider extends EventEmitter {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
