/**
 * OCI references: `[registry/]repository[:tag][@sha256:digest]`, parsed strictly (Distribution
 * reference grammar). Without a registry the reference means Docker Hub, as in every OCI
 * tool; without a tag or digest the tag is `latest`.
 */
import { SkepError } from '../shared/index.js';

export interface OciRef {
  /** Registry host[:port] as written (Docker Hub: `docker.io`). */
  registry: string;
  repository: string;
  tag: string | undefined;
  digest: string | undefined;
}

const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const REPOSITORY = new RegExp(`^${COMPONENT}(?:/${COMPONENT})*$`);
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:]+\])(?::[0-9]{1,5})?$/;

/** Parses a reference or throws a 400 naming what is wrong. */
export function parseOciRef(input: string): OciRef {
  const bad = (why: string) => new SkepError('invalid_reference', `invalid OCI reference "${input}": ${why}`);
  if (input === '' || input.length > 512 || /\s/.test(input))
    throw bad('empty, too long or contains whitespace');
  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw bad('the digest must be sha256:<64 hex>');
  }
  let registry = 'docker.io';
  const slash = rest.indexOf('/');
  if (slash !== -1) {
    const first = rest.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('[')) {
      if (!HOST.test(first)) throw bad(`"${first}" is not a valid registry host`);
      registry = first;
      rest = rest.slice(slash + 1);
    }
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon !== -1) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad(`"${tag}" is not a valid tag`);
  }
  if (!REPOSITORY.test(rest))
    throw bad(`"${rest}" is not a valid repository (lowercase letters, digits, separators)`);
  if (registry === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  if (tag === undefined && digest === undefined) tag = 'latest';
  return { registry, repository: rest, tag, digest };
}

export function formatOciRef(ref: OciRef): string {
  return `${ref.registry}/${ref.repository}${ref.tag === undefined ? '' : `:${ref.tag}`}${ref.digest === undefined ? '' : `@${ref.digest}`}`;
}

/** The last path segment of the repository: an artifact's skill name must equal it. */
export function repositoryName(ref: OciRef): string {
  const parts = ref.repository.split('/');
  return parts[parts.length - 1] ?? ref.repository;
}

/** True when the string looks like an OCI reference rather than a plain skill name (ToolHive's rule). */
export function looksLikeOciRef(value: string): boolean {
  return value.includes('/') || value.includes(':') || value.includes('@');
}
