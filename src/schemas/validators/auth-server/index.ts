/**
 * The embedded authorization server's validator, an entry of its own: a runner loads the auth
 * server on demand, and a bundle puts every module an up-front module imports up front, so
 * `validators/index.ts` (which the runner loads at start) must not import this large one.
 */
import type { GeneratedValidator } from '../format.js';
import { validate } from '../embedded-auth-server.generated.js';

export { FORBIDDEN_AUTHORIZATION_PARAMS } from '../../authorization-params.js';
export { formatAjvError } from '../format.js';

/** `embedded_auth_server_config` (`EmbeddedAuthServerConfigSchema`); reports every problem. */
export const validateEmbeddedAuthServerConfig: GeneratedValidator = validate;
