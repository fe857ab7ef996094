/**
 * TypeBox builders shared by the Kubernetes resources of `skep.dev/v1beta1`
 * (`extauth/schema.ts`, `workloads/schema.ts`): every field carries a description (the CRD
 * shows it in `kubectl explain`), string enums are `type: string` with an `enum`, and
 * cross-field rules are CEL rules in `x-kubernetes-validations`.
 */
import { Type } from 'typebox';

/** A CEL rule as Kubernetes reads it from `x-kubernetes-validations`. */
export interface CelRule {
  rule: string;
  message: string;
  /** JSONPath-like suffix (`.awsSts`) naming the field the message is about. */
  fieldPath?: string;
}

/** The schema options that attach CEL rules to an object. */
export const rules = (...list: CelRule[]) => ({ 'x-kubernetes-validations': list });

export const str = (description: string, extra: Record<string, unknown> = {}) =>
  Type.String({ description, ...extra });

export const enumOf = <const T extends readonly string[]>(
  values: T,
  description: string,
  extra: Record<string, unknown> = {},
) => Type.Enum<T[number][]>([...values], { type: 'string', description, ...extra });

export const stringMap = (description: string) => Type.Record(Type.String(), Type.String(), { description });

export const stringList = (description: string, item: Record<string, unknown> = {}) =>
  Type.Array(Type.String(item), { description });
