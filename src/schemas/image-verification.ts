/**
 * The run configuration's `image_verification` (a Skep extension; ToolHive has the
 * `--image-verification` flag of `thv run` instead): check the container image's cosign
 * signature before the container starts. Key-based only for now; the keyless provenance of a
 * registry entry (`signer_identity`, `cert_issuer`, `repository_uri`) is carried and reported,
 * and without a public key the image counts as not verifiable (refused under `enforce`).
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
    signer_identity: Opt(Str()),
    cert_issuer: Opt(Str()),
    repository_uri: Opt(Str()),
  },
  { additionalProperties: false },
);
export type ImageVerification = Static<typeof ImageVerificationSchema>;
