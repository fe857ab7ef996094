/**
 * A command's action that loads its implementation when the command runs. The command tree
 * (names, options, help) is declared up front and cheaply; what a command does, and the
 * libraries it needs (the HTTP server, the Kubernetes client, the domain services), is a
 * dynamic `import()` away, so `skep --help` or `skep version` parses none of it.
 */
export function lazyAction<A extends unknown[]>(
  load: () => Promise<(...args: A) => unknown>,
): (...args: A) => Promise<void> {
  return async (...args) => {
    const run = await load();
    await run(...args);
  };
}
