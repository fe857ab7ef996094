/** Types of scripts/bundle-ui.mjs for the tests and the bench that build the UI. */
export function uiBuildOptions(outdir: string): import('esbuild').BuildOptions;
export function buildUi(outdir?: string): Promise<{ script: string; style: string }>;
