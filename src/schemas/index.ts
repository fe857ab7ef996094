export { checkMatcher, toCelValue } from './cel.js';
export type { Validator } from './validate.js';
export { createValidator, formatAjvError } from './validate.js';
