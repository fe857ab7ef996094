/**
 * A custom resource kind of `skep.dev/v1beta1` as one definition: its names, its spec and
 * status schemas, and its `kubectl get` columns. The CRD generator (`src/control/operator/crd.ts`),
 * the validator and the controllers read kinds only through this shape.
 */
import { type TSchema, Type } from 'typebox';
import { EXTAUTH_API_VERSION, ObjectMetaSchema } from './extauth/schema.js';

/** One column of `kubectl get` (a CRD's `additionalPrinterColumns`). */
export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  /** 1: shown by `kubectl get -o wide` only. */
  priority?: number;
}

/** Everything the CRD generator, the validator and the controller need to know of a kind. */
export interface KindDefinition {
  kind: string;
  plural: string;
  /** The kind in lower case. */
  singular: string;
  shortNames: readonly string[];
  description: string;
  spec: TSchema;
  status: TSchema;
  /** Whether `spec` is required on the object. */
  specRequired: boolean;
  printerColumns: PrinterColumn[];
  /** The whole object, for the validator. */
  object: TSchema;
}

export const column = (name: string, jsonPath: string, type = 'string'): PrinterColumn => ({
  name,
  type,
  jsonPath,
});

/** The status (True, False, Unknown) of one of the object's conditions. */
export const conditionColumn = (condition: string): PrinterColumn =>
  column(condition, `.status.conditions[?(@.type=='${condition}')].status`);

export const AGE_COLUMN = column('Age', '.metadata.creationTimestamp', 'date');

const objectSchema = (kind: string, spec: TSchema, status: TSchema, specRequired: boolean) =>
  Type.Object({
    apiVersion: Type.Literal(EXTAUTH_API_VERSION),
    kind: Type.Literal(kind),
    metadata: ObjectMetaSchema,
    spec: specRequired ? spec : Type.Optional(spec),
    status: Type.Optional(status),
  });

/** A kind from its names and schemas; `spec` is required unless `specRequired` is false. */
export function defineKind(
  d: Omit<KindDefinition, 'singular' | 'specRequired' | 'object'> & { specRequired?: boolean },
): KindDefinition {
  const specRequired = d.specRequired ?? true;
  return {
    kind: d.kind,
    plural: d.plural,
    singular: d.kind.toLowerCase(),
    shortNames: d.shortNames,
    description: d.description,
    spec: d.spec,
    status: d.status,
    specRequired,
    printerColumns: d.printerColumns,
    object: objectSchema(d.kind, d.spec, d.status, specRequired),
  };
}
