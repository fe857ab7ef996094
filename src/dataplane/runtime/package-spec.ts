/**
 * The package of an `npx://` or `uvx://` image becomes one argument of npx or uvx. A caller
 * (an API request, a registry entry) chooses it, so it must not be readable as anything but a
 * package: an argument that starts with `-` is an option (POSIX.1-2017 XBD §12.2, guideline 4),
 * and `npx://--call=<command>` would make npx run the command.
 */
import { SkepError } from '../../shared/index.js';

/**
 * Throws `invalid_reference`, naming the request's `image` field, when `spec` starts with `-` or holds
 * white space or a control character (no package name does; they only split it in a shell or
 * a log). Workloads pass this at create and at every start.
 */
export function checkPackageSpec(image: string, scheme: 'npx' | 'uvx', spec: string): void {
  const problem = spec.startsWith('-')
    ? `starts with '-', which ${scheme} would read as one of its own options`
    : /[\s\x00-\x1f\x7f-\x9f]/.test(spec)
      ? 'contains white space or a control character'
      : undefined;
  if (problem !== undefined)
    throw new SkepError(
      'invalid_reference',
      `image: the package in '${image}' ${problem}; name a package, e.g. ${scheme === 'npx' ? 'npx://@modelcontextprotocol/server-everything@1' : 'uvx://mcp-server-fetch'}, and pass server arguments separately`,
    );
}
