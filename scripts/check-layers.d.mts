// Types for scripts/check-layers.mjs, so tests can call it in-process.
export declare const PLANES: Record<string, 'base' | 'data' | 'control'>;
export declare function checkLayers(srcDir: string): { violations: string[]; edges: Map<string, string> };
