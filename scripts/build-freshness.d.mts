// Types for scripts/build-freshness.mjs, so tests can call it in-process.
export declare const BUILT: string[];
export declare const BUILD_STAMP: string;
export declare function staleReason(root: string): string | undefined;
