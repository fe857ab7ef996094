/**
 * The run configuration's `image_verification` (a Skep extension; ToolHive has the
 * `--image-verification` flag of `thv run` instead): check the container image's cosign
 * signature before the container starts. Key-based (`public_keys`) and keyless: a Fulcio
 * certificate checked against a Sigstore trusted root (`trusted_root`: a file, or the built-in
 * `sigstore-public-good`) and the identity policy
 * of the registry entry's provenance (`signer_identity` or `signer_identity_regexp`, with
 * `cert_issuer`, and optionally `repository_uri`). With neither a key nor a trusted root the
 * image counts as not verifiable (refused under `enforce`).
 */
import { type Static, Type } from 'typebox';
import { Opt, Str } from './shorthand.js';

export const ImageVerificationSchema = Type.Object(
  {
    policy: Type.Union([Type.Literal('warn'), Type.Literal('enforce')], {
      description:
        '`warn`: run, and show what the check found in the status; `enforce`: refuse to start unless verified.',
    }),
    public_keys: Opt(
      Type.Array(Str(), {
        description: 'Trusted ECDSA P-256 public keys (SPKI PEM text, as `cosign public-key` prints).',
      }),
    ),
    trusted_root: Opt(
      Type.String({
        description:
          'Path of a Sigstore `trusted_root.json` (certificate authorities and transparency logs) on the host that runs the workload, or `sigstore-public-good`: the public-good Sigstore instance (fulcio.sigstore.dev, rekor.sigstore.dev), fetched through its TUF repository and cached (offline: the last copy fetched, else the copy shipped with Skep). Keyless signatures are verified against it.',
      }),
    ),
    signer_identity: Opt(
      Type.String({
        description: "Keyless: the signing certificate's identity (its e-mail or URI SAN), exactly.",
      }),
    ),
    signer_identity_regexp: Opt(
      Type.String({
        description:
          "Keyless: a regular expression the certificate's identity must match as a whole (instead of `signer_identity`).",
      }),
    ),
    cert_issuer: Opt(
      Type.String({ description: "Keyless: the certificate's OIDC issuer (Fulcio extension), exactly." }),
    ),
    repository_uri: Opt(
      Type.String({
        description: "Keyless: the certificate's source repository URI (Fulcio extension), exactly.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ImageVerification = Static<typeof ImageVerificationSchema>;
