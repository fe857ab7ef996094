/**
 * Validating documents against the schemas at run time with Ajv (config files, stored and
 * imported documents, registry sources, CRDs) and the CEL helpers (Kubernetes validation rules,
 * awsSts role mappings). The schemas themselves are in src/schemas/, which loads neither; a
 * workload runner checks its configuration with the generated validators there instead.
 */
export { checkMatcher, toCelValue } from './cel.js';
export type { Validator } from './validate.js';
export { createValidator } from './validate.js';
