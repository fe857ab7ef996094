export { createValidator, formatAjvError } from './validate.js';
export type { Validator } from './validate.js';
