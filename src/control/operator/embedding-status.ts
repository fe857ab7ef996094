/**
 * An EmbeddingServer's model and volume conditions, as the reference names them (`ModelReady`
 * with reasons `ModelDownloading`/`ModelReady`, `VolumeReady` with `VolumeCreating`/`VolumeReady`/
 * `VolumeFailed`), derived from what the operator can see: the StatefulSet's status and the phase
 * of the model-cache claims its `volumeClaimTemplates` create. The text-embeddings-inference
 * server downloads and loads the model before its readiness probe passes, so a pod that exists
 * but is not ready is still downloading (the reference's `Downloading` phase); a ready one serves
 * the model. A failed download shows as a pod that never becomes ready: the StatefulSet's status
 * does not tell it from a slow one, so `ModelFailed` is not set.
 */
import type { Condition } from '../../schemas/extauth/index.js';
import type { KubeObject } from './kube.js';

type Node = Record<string, unknown>;
export type NewCondition = Omit<Condition, 'lastTransitionTime'>;

/** The name of the volume claim template the render gives the model cache. */
export const MODEL_CACHE_CLAIM = 'model-cache';

/**
 * The claims a StatefulSet with the model-cache template creates for `replicas` pods:
 * `<template>-<statefulset>-<ordinal>` (Kubernetes StatefulSet "Stable Storage").
 */
export function modelCacheClaims(statefulSet: string, replicas: number): string[] {
  return Array.from({ length: replicas }, (_, i) => `${MODEL_CACHE_CLAIM}-${statefulSet}-${i}`);
}

export interface EmbeddingState {
  /** Pods wanted (the rendered StatefulSet's replicas). */
  want: number;
  /** The live StatefulSet, if it exists yet. */
  live: KubeObject | undefined;
  /** The model-cache claims by name, when the model cache is enabled; undefined entries do not exist yet. */
  claims?: Array<{ name: string; claim: KubeObject | undefined }>;
}

export interface EmbeddingStatus {
  conditions: NewCondition[];
  /** `Downloading` while pods exist and none is ready; otherwise the controller's phase stands. */
  phase?: 'Downloading';
  message?: string;
}

export function embeddingStatus(state: EmbeddingState): EmbeddingStatus {
  const status = (state.live?.status ?? {}) as Node;
  const pods = Number(status['replicas'] ?? 0);
  const ready = Number(status['readyReplicas'] ?? 0);
  const out: EmbeddingStatus = { conditions: [] };
  if (ready > 0) {
    out.conditions.push({
      type: 'ModelReady',
      status: 'True',
      reason: 'ModelReady',
      message: `${ready}/${state.want} replicas serve the model`,
    });
  } else {
    const message =
      pods > 0
        ? `downloading and loading the model: ${pods} pods, none ready yet`
        : 'waiting for the StatefulSet to create its pods';
    out.conditions.push({ type: 'ModelReady', status: 'False', reason: 'ModelDownloading', message });
    if (pods > 0) Object.assign(out, { phase: 'Downloading', message });
  }
  if (state.claims !== undefined) out.conditions.push(volumeCondition(state.claims));
  return out;
}

/** `VolumeReady`: every model-cache claim is Bound; Lost is a failure; anything else is pending. */
function volumeCondition(claims: NonNullable<EmbeddingState['claims']>): NewCondition {
  const phaseOf = (c: KubeObject | undefined) => String((c?.status as Node | undefined)?.['phase'] ?? '');
  const lost = claims.filter((c) => phaseOf(c.claim) === 'Lost').map((c) => c.name);
  if (lost.length > 0)
    return {
      type: 'VolumeReady',
      status: 'False',
      reason: 'VolumeFailed',
      message: `PersistentVolumeClaim ${lost.join(', ')} lost its volume`,
    };
  const waiting = claims.filter((c) => phaseOf(c.claim) !== 'Bound');
  if (waiting.length === 0)
    return {
      type: 'VolumeReady',
      status: 'True',
      reason: 'VolumeReady',
      message: `PersistentVolumeClaim ${claims.map((c) => c.name).join(', ')} bound`,
    };
  return {
    type: 'VolumeReady',
    status: 'False',
    reason: 'VolumeCreating',
    message: waiting
      .map(
        (c) =>
          `PersistentVolumeClaim ${c.name} ${c.claim === undefined ? 'not created yet' : phaseOf(c.claim) || 'Pending'}`,
      )
      .join('; '),
  };
}
