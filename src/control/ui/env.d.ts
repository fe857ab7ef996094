/** esbuild bundles the stylesheet the shell imports into its own hashed file. */
declare module '*.css';
