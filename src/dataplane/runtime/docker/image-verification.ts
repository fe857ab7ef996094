/**
 * Image verification before a container starts (ToolHive's `--image-verification`): the image
 * reference is resolved to the digest its registry serves, the cosign signatures stored beside
 * it (`sha256-<hex>.sig`, simple signing) are checked against the trusted public keys and, when
 * a Sigstore trusted root is configured, as keyless signatures (a Fulcio certificate and its
 * Rekor entry, `protocol/sigstore-verify.ts`) against the identity policy (`signer_identity` or
 * `signer_identity_regexp`, `cert_issuer`, optionally `repository_uri`). On success the container
 * runs that exact digest — what was verified is what runs, even if the tag moves in between.
 * `enforce` refuses any other outcome; `warn` runs the image and reports the outcome in the
 * workload status and the log. Keyless provenance without a trusted root is `unverifiable` —
 * refused under `enforce`, reported under `warn` — never silently passed.
 *
 * A private registry is read with the login the pull uses: both find it by the same search of
 * the container tools' auth files (`oci-signature-credentials.ts`), and the runtime sends it
 * with the pull, so an image that can be pulled can be checked.
 *
 * The signature modules are loaded lazily, only for workloads that ask for the check.
 */
import type { KeyObject } from 'node:crypto';
import { describeError, SkepError } from '../../../shared/index.js';
import type { ImageVerificationPolicy, ImageVerificationResult } from '../types.js';

export interface VerifiedImage {
  /** What to run: `registry/repository@digest` when verified, else the image as given. */
  image: string;
  result: ImageVerificationResult;
}

/** Checks `image` under `policy`; throws `image_verification_failed` when `enforce` refuses it. */
export async function verifyImage(
  image: string,
  policy: ImageVerificationPolicy,
  options: CheckOptions = {},
): Promise<VerifiedImage> {
  const result = await check(image, policy, options);
  if (result.status !== 'verified' && policy.policy === 'enforce') {
    throw new SkepError(
      'image_verification_failed',
      `${result.message} (image_verification policy: enforce)`,
    );
  }
  const pinned =
    result.status === 'verified' && result.digest !== undefined
      ? `${image.split('@')[0]!.replace(/:[^/:]+$/, '')}@${result.digest}`
      : image;
  return { image: pinned, result };
}

interface CheckOptions {
  fetch?: typeof fetch;
  /** Where the registry auth files are looked up (`HOME`, `XDG_RUNTIME_DIR`, `REGISTRY_AUTH_FILE`...). */
  env?: NodeJS.ProcessEnv;
}

async function check(
  image: string,
  policy: ImageVerificationPolicy,
  options: CheckOptions,
): Promise<ImageVerificationResult> {
  const base = { policy: policy.policy, image };
  const [sig, reg, creds] = await Promise.all([
    import('../../../protocol/oci-signature.js'),
    import('../../../protocol/oci-signature-registry.js'),
    import('../../../protocol/oci-signature-credentials.js'),
  ]);
  const keys: KeyObject[] = [];
  for (const [i, pem] of (policy.public_keys ?? []).entries()) {
    try {
      keys.push(sig.loadPublicKey(pem));
    } catch (err) {
      throw new SkepError(
        'invalid_config',
        `image_verification.public_keys[${i}]: ${(err as Error).message}`,
      );
    }
  }
  const keyless = await keylessCheck(policy, options.env ?? process.env);
  if (keys.length === 0 && keyless === undefined) {
    const named = policy.signer_identity ?? policy.signer_identity_regexp;
    return {
      ...base,
      status: 'unverifiable',
      message:
        named !== undefined || policy.cert_issuer !== undefined
          ? `image ${image}: keyless signatures (signer ${named ?? '?'}, issuer ${policy.cert_issuer ?? '?'}) need a Sigstore trusted root: give image_verification.trusted_root (skep run --image-verification-trusted-root <trusted_root.json | sigstore-public-good>)`
          : `image ${image}: no public key or trusted root to verify against; give image_verification.public_keys (skep run --image-verification-key <file>) or image_verification.trusted_root with signer_identity and cert_issuer`,
    };
  }
  let reader;
  let digest: string;
  let login: RegistryLogin | undefined;
  try {
    const ref = reg.parseImageRef(image);
    const search = await creds.findRegistryCredentials(ref.registry, ref.repository, options.env);
    login = search;
    reader = reg.registryReader(ref, {
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      ...(search.found === undefined ? {} : { credentials: search.found }),
    });
    digest = ref.digest ?? (await reader.resolveDigest(ref.tag ?? 'latest'));
  } catch (err) {
    return {
      ...base,
      status: 'unverifiable',
      message: `image ${image}: cannot read it from its registry: ${describeError(err)}${loginHint(err, login)}`,
    };
  }
  let outcome;
  try {
    outcome = await sig.verifyArtifact(reader, digest, keys, keyless);
  } catch (err) {
    return {
      ...base,
      digest,
      status: 'invalid',
      message: `image ${image}: unreadable signature: ${describeError(err)}${loginHint(err, login)}`,
    };
  }
  if (outcome.status === 'verified') {
    if (outcome.issuer !== undefined)
      return {
        ...base,
        digest,
        status: 'verified',
        signer: outcome.signer,
        issuer: outcome.issuer,
        message: `image ${image} (${digest}) verified: keyless signature by ${outcome.signer} (issuer ${outcome.issuer})`,
      };
    return {
      ...base,
      digest,
      status: 'verified',
      signer: outcome.signer,
      // Keyless identity fields beside a key, without a trusted root, are not checked: said, never implied.
      message: `image ${image} (${digest}) verified: signed by ${outcome.signer}${
        keyless === undefined &&
        (policy.signer_identity !== undefined ||
          policy.signer_identity_regexp !== undefined ||
          policy.cert_issuer !== undefined ||
          policy.repository_uri !== undefined)
          ? '; the keyless provenance (signer_identity, cert_issuer, repository_uri) is not checked without image_verification.trusted_root'
          : ''
      }`,
    };
  }
  if (outcome.status === 'unsigned')
    return { ...base, digest, status: 'unsigned', message: `image ${image} (${digest}) is not signed` };
  return {
    ...base,
    digest,
    status: 'invalid',
    message: `image ${image} (${digest}): signature verification failed: ${outcome.reason}`,
  };
}

/**
 * The keyless check of `policy`: its trusted root (the file it names, or the built-in
 * `sigstore-public-good`, its TUF cache under `env`'s Skep cache folder) bound to its identity
 * policy; undefined without `trusted_root`. A trusted root without an identity policy is
 * refused, as cosign refuses keyless verification without `--certificate-identity` and
 * `--certificate-oidc-issuer`: any certificate from the CA would pass.
 */
async function keylessCheck(policy: ImageVerificationPolicy, env: NodeJS.ProcessEnv) {
  if (policy.trusted_root === undefined) return undefined;
  const sigstore = await import('../../../protocol/sigstore-verify.js');
  const identity = {
    certIssuer: policy.cert_issuer ?? '',
    ...(policy.signer_identity === undefined ? {} : { signerIdentity: policy.signer_identity }),
    ...(policy.signer_identity_regexp === undefined
      ? {}
      : { signerIdentityRegexp: policy.signer_identity_regexp }),
    ...(policy.repository_uri === undefined ? {} : { repositoryUri: policy.repository_uri }),
  };
  try {
    if (policy.cert_issuer === undefined) throw new Error('cert_issuer is required with trusted_root');
    sigstore.checkIdentityPolicy(identity);
  } catch (err) {
    throw new SkepError('invalid_config', `image_verification: ${(err as Error).message}`);
  }
  const roots = await import('../../../protocol/sigstore-trusted-root.js');
  const { resolvePaths } = await import('../../../config/index.js');
  let root: Awaited<ReturnType<typeof roots.resolveTrustedRoot>>;
  try {
    root = await roots.resolveTrustedRoot(policy.trusted_root, { cacheDir: resolvePaths(env).cacheDir, env });
  } catch (err) {
    throw new SkepError('invalid_config', `image_verification.trusted_root: ${(err as Error).message}`);
  }
  return roots.trustedRootCheck(root, [identity]);
}

/** What the credential search found (`findRegistryCredentials`), as far as messages need it. */
interface RegistryLogin {
  found?: { source: string } | undefined;
  searched?: string[];
  helper?: string;
}

/** For a registry that refused access: which credentials were used, or where none were found. */
function loginHint(err: unknown, login: RegistryLogin | undefined): string {
  const status = (err as { status?: unknown }).status;
  if (login === undefined || (status !== 401 && status !== 403)) return '';
  if (login.found !== undefined) return ` (the registry refused the credentials from ${login.found.source})`;
  const helper =
    login.helper === undefined
      ? ''
      : `; the credential helper docker-credential-${login.helper} is not used for this check`;
  return ` (no credentials for this registry in ${(login.searched ?? []).join(', ')}${helper}; log in with podman login)`;
}
