/**
 * awsSts role selection (as ToolHive's CRD puts it: "role is chosen by priority-ordered
 * `roleMappings`, else `fallbackRoleArn`"). A mapping matches by claim membership (its
 * `claim` value is an element of the list claim `role_claim`, default `groups`) or by a CEL
 * `matcher` over the JWT claims (`claims` variable). The matching mapping with the lowest
 * `priority` wins; an omitted priority ranks last and ties keep configuration order. A CEL
 * expression that fails at run time (missing claim, wrong type, non-bool result) counts as
 * no match, so a bad token can never pick a role by accident.
 */
import { parse } from '@marcbachmann/cel-js';
import { checkMatcher, toCelValue } from '../../../validation/index.js';
import { SkepError } from '../../../shared/index.js';

export interface RoleMapping {
  claim?: string;
  matcher?: string;
  roleArn: string;
  priority?: number;
}

export interface RoleMapperOptions {
  roleMappings?: RoleMapping[];
  fallbackRoleArn?: string;
  /** Claim holding the list `claim` mappings look in; default `groups`. */
  roleClaim?: string;
}

export interface RoleMapper {
  /** The role for these claims, or undefined (→ 403). */
  select(claims: Record<string, unknown>): string | undefined;
}

const ROLE_ARN = /^arn:(aws|aws-cn|aws-us-gov):iam::\d{12}:role\/[\w+=,.@\-_/]+$/;

interface CompiledMapping {
  roleArn: string;
  matches(claims: Record<string, unknown>, celClaims: () => unknown): boolean;
}

/** Validates and compiles the mappings; wrong configuration throws `invalid_config` at start. */
export function createRoleMapper(options: RoleMapperOptions): RoleMapper {
  const field = 'aws_sts_config';
  const roleClaim = options.roleClaim || 'groups';
  const mappings = options.roleMappings ?? [];
  if (options.fallbackRoleArn === undefined && mappings.length === 0)
    throw new SkepError('invalid_config', `${field}: set fallback_role_arn or role_mappings`);
  if (options.fallbackRoleArn !== undefined && !ROLE_ARN.test(options.fallbackRoleArn))
    throw new SkepError(
      'invalid_config',
      `${field}.fallback_role_arn: "${options.fallbackRoleArn}" is not an IAM role ARN`,
    );
  const compiled = mappings.map((m, i): { c: CompiledMapping; priority: number; index: number } => {
    const at = `${field}.role_mappings[${i}]`;
    if (!ROLE_ARN.test(m.roleArn ?? ''))
      throw new SkepError('invalid_config', `${at}.role_arn: "${m.roleArn ?? ''}" is not an IAM role ARN`);
    if ((m.claim === undefined) === (m.matcher === undefined))
      throw new SkepError('invalid_config', `${at}: set exactly one of claim or matcher`);
    if (m.priority !== undefined && !(Number.isInteger(m.priority) && m.priority >= 0))
      throw new SkepError('invalid_config', `${at}.priority: must be an integer of at least 0`);
    const priority = m.priority ?? Number.POSITIVE_INFINITY;
    if (m.claim !== undefined) {
      const value = m.claim;
      return {
        priority,
        index: i,
        c: {
          roleArn: m.roleArn,
          matches: (claims) => {
            const list = claims[roleClaim];
            return Array.isArray(list) && list.includes(value);
          },
        },
      };
    }
    const expression = m.matcher as string;
    const problem = checkMatcher(expression);
    if (problem !== undefined) throw new SkepError('invalid_config', `${at}.matcher: ${problem}`);
    const evaluate = parse(expression);
    return {
      priority,
      index: i,
      c: {
        roleArn: m.roleArn,
        matches: (_claims, celClaims) => {
          try {
            return evaluate({ claims: celClaims() }) === true;
          } catch {
            return false;
          }
        },
      },
    };
  });
  // Evaluating in (priority, configuration order) and stopping at the first match picks the
  // same role as "collect every match, stable-sort by priority, take the first".
  const ordered = compiled.sort((a, b) => a.priority - b.priority || a.index - b.index).map((x) => x.c);
  const fallback = options.fallbackRoleArn;
  return {
    select(claims) {
      let cel: unknown;
      const celClaims = () => {
        cel ??= toCelValue(claims);
        return cel;
      };
      for (const m of ordered) if (m.matches(claims, celClaims)) return m.roleArn;
      return fallback;
    },
  };
}
