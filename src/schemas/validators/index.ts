/**
 * The configuration checks a workload runner makes without loading Ajv or TypeBox: the rules
 * JSON Schema cannot state, next to their schemas.
 */
export { allowedOriginsProblem } from '../allowed-origins.js';
