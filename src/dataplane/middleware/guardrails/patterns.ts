/**
 * The credential patterns of the `credentials` detector, each named (the name is what a block
 * error, a redaction marker and an audit event say). Each pattern has literal `hints`: a text
 * that contains none of them is not searched with the regular expression, which keeps the
 * common case (no credential at all) to a few substring searches.
 *
 * Every expression is bounded (no unbounded repetition), so a match is at most a few KiB
 * long and the work per string is linear. Sources for the formats are the issuers' own
 * documentation of their token formats (AWS access key id prefixes, GitHub's token prefixes,
 * Slack's `xox?-` tokens, Google's `AIza` API keys, RFC 7468 PEM private keys, RFC 7519 JWTs).
 */
import type { CredentialPatternName } from '../../../schemas/validators/index.js';

export interface CredentialPattern {
  readonly name: CredentialPatternName;
  /** At least one of these substrings is in every match. */
  readonly hints: readonly string[];
  /** Global (`g`) expression; `lastIndex` is reset before each use. */
  readonly regex: RegExp;
}

// Letters and digits on both sides count as "inside a word": a key embedded in a longer
// alphanumeric run is not that key (no `\b` for `-` and `_`, which tokens contain).
const B = '(?<![A-Za-z0-9])';
const E = '(?![A-Za-z0-9])';

export const CREDENTIAL_PATTERNS: readonly CredentialPattern[] = [
  {
    // AWS access key ids: long-term (AKIA), temporary (ASIA) and the rarer prefixes.
    name: 'aws_access_key_id',
    hints: ['AKIA', 'ASIA', 'ABIA', 'ACCA'],
    regex: new RegExp(`${B}(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}${E}`, 'g'),
  },
  {
    // GitHub: classic tokens ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained github_pat_.
    name: 'github_token',
    hints: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'],
    regex: new RegExp(`${B}(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})${E}`, 'g'),
  },
  {
    name: 'gitlab_token',
    hints: ['glpat-'],
    regex: new RegExp(`${B}glpat-[A-Za-z0-9_-]{20,64}${E}`, 'g'),
  },
  {
    // Slack bot, user, app-level and refresh tokens.
    name: 'slack_token',
    hints: ['xox'],
    regex: new RegExp(`${B}xox[abposre]-[A-Za-z0-9-]{10,250}${E}`, 'g'),
  },
  {
    name: 'slack_webhook_url',
    hints: ['hooks.slack.com'],
    regex: /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9_/-]{20,200}/g,
  },
  {
    name: 'google_api_key',
    hints: ['AIza'],
    regex: new RegExp(`${B}AIza[0-9A-Za-z_-]{35}${E}`, 'g'),
  },
  {
    name: 'stripe_secret_key',
    hints: ['_live_', '_test_'],
    regex: new RegExp(`${B}(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,247}${E}`, 'g'),
  },
  {
    // OpenAI keys carry "T3BlbkFJ" (base64 of "OpenAI") in the middle.
    name: 'openai_api_key',
    hints: ['T3BlbkFJ'],
    regex: new RegExp(`${B}sk-[A-Za-z0-9_-]{0,80}T3BlbkFJ[A-Za-z0-9_-]{16,200}${E}`, 'g'),
  },
  {
    name: 'anthropic_api_key',
    hints: ['sk-ant-'],
    regex: new RegExp(`${B}sk-ant-[a-z]{2,10}\\d{2}-[A-Za-z0-9_-]{80,200}${E}`, 'g'),
  },
  {
    name: 'npm_token',
    hints: ['npm_'],
    regex: new RegExp(`${B}npm_[A-Za-z0-9]{36}${E}`, 'g'),
  },
  {
    // RFC 7468 private keys (PKCS #8, RSA, EC, OpenSSH, encrypted): the whole block when its
    // END line is within 16 KiB, else the header and the key material that follows it.
    name: 'private_key_pem',
    hints: ['PRIVATE KEY-----'],
    regex:
      /-----BEGIN ((?:[A-Z0-9]{1,20} ){0,3})PRIVATE KEY-----(?:[\s\S]{0,16384}?-----END \1PRIVATE KEY-----|[A-Za-z0-9+/=\s:,.-]{0,16384})/g,
  },
  {
    // A JWT (RFC 7519 compact form): a JSON header and payload, each starting `{"` (base64url
    // `eyJ`), and a signature. Unsigned tokens (`alg: none`, empty signature) are left alone.
    name: 'jwt',
    hints: ['eyJ'],
    regex: new RegExp(
      `${B}eyJ[A-Za-z0-9_-]{8,4096}\\.eyJ[A-Za-z0-9_-]{8,16384}\\.[A-Za-z0-9_-]{16,2048}${E}`,
      'g',
    ),
  },
];
