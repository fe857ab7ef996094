/**
 * The validator of Skep's config file (`ConfigSchema`), an entry of its own: every process reads
 * the config file, and none of them should need Ajv or TypeBox to check it. It fills in the
 * schema's defaults as it checks.
 */
import type { GeneratedValidator } from '../format.js';
import { validate } from '../skep-config.generated.js';

export { formatAjvError } from '../format.js';

/** The config file (`ConfigSchema`): every problem; missing members take their defaults. */
export const validateConfigFile: GeneratedValidator = validate;
