/** Types of scripts/gen-validators.mjs for the test that checks the generated validators. */
export const VALIDATORS: readonly {
  file: string;
  module: string;
  schema: string;
  refs?: readonly string[];
  allErrors?: boolean;
  verbose?: boolean;
}[];
export function renderValidators(): Promise<{ file: string; text: string }[]>;
