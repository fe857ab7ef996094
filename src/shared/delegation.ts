/**
 * The RFC 8693 delegation chain of a token (§4.1 `act`: nested members, the outermost being
 * the current actor), in the shape ToolHive's audit events (`delegation`) and webhook
 * requests (`principal.delegation`) carry it: only the (iss, sub) pair of each hop, outermost
 * first, capped, with what could not be read flagged rather than dropped.
 */
import { isRecord } from './is-record.js';

/** One hop of an RFC 8693 delegation chain: only the (iss, sub) pair is recorded (data minimisation). */
export interface DelegationHop {
  iss?: string;
  sub?: string;
}

export type MalformedReason =
  'act_not_object' | 'nested_act_not_object' | 'iss_not_string' | 'sub_not_string';

/** `chain[0]` is the current actor; truncation drops the innermost (earliest) hops. */
export interface DelegationChain {
  chain: DelegationHop[];
  truncated: boolean;
  omitted: number;
  malformed: boolean;
  malformedReason?: MalformedReason;
}

/**
 * Flattens an RFC 8693 `act` claim (§4.1: nested `act` members, the outermost being the
 * current actor) into an outermost-first chain of at most `maxDepth` hops. It never fails:
 * an unreadable delegation is recorded as `malformed` with the first violation as the
 * reason, because "delegation we could not read" is not "no delegation". Undefined when the
 * claim says nothing (absent or null).
 */
export function delegationChainOf(act: unknown, maxDepth: number): DelegationChain | undefined {
  if (act === undefined || act === null) return undefined;
  const chain: DelegationChain = { chain: [], truncated: false, omitted: 0, malformed: false };
  const flag = (reason: MalformedReason): void => {
    chain.malformed = true;
    chain.malformedReason ??= reason;
  };
  if (!isRecord(act)) {
    flag('act_not_object');
    return chain;
  }
  let current: Record<string, unknown> = act;
  for (;;) {
    if (chain.chain.length >= maxDepth) {
      // Past the cap: count the hops left (a non-object `act` down there is a violation, not a hop).
      chain.truncated = true;
      let node: Record<string, unknown> | undefined = current;
      while (node !== undefined) {
        chain.omitted++;
        const next: unknown = node['act'];
        if (next === undefined || next === null) node = undefined;
        else if (isRecord(next)) node = next;
        else {
          flag('nested_act_not_object');
          node = undefined;
        }
      }
      return chain;
    }
    const hop: DelegationHop = {};
    const iss = current['iss'];
    if (iss !== undefined) {
      if (typeof iss === 'string') {
        if (iss !== '') hop.iss = iss;
      } else flag('iss_not_string');
    }
    const sub = current['sub'];
    if (sub !== undefined) {
      if (typeof sub === 'string') {
        if (sub !== '') hop.sub = sub;
      } else flag('sub_not_string');
    }
    chain.chain.push(hop);
    const next = current['act'];
    if (next === undefined || next === null) return chain;
    if (!isRecord(next)) {
      flag('nested_act_not_object');
      return chain;
    }
    current = next;
  }
}
