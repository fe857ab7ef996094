export type { Validator } from './validate.js';
export { createValidator, formatAjvError } from './validate.js';
