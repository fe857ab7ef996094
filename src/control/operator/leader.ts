/**
 * Leader election over a coordination.k8s.io/v1 Lease, so that several operator replicas can
 * run with one controller active (the webhook is stateless and serves on every replica).
 *
 * The algorithm is the usual one: a candidate takes the Lease when it does not exist, when
 * its holder released it (empty `holderIdentity`), or when the record has not changed for
 * `leaseDuration` as measured on this candidate's own clock (the holder's `renewTime` is not
 * compared with local time, so clock skew between nodes does not matter). Every write is a
 * resourceVersion-checked PUT (or a create), so two candidates never both win. The leader
 * renews every `retryPeriod`; when it cannot renew for `renewDeadline` it stops leading
 * (the controller is closed) and becomes a candidate again. A leader that shuts down
 * releases the Lease, so a successor takes over at once instead of after expiry.
 */
import { type Logger, sleepUnlessAborted } from '../../shared/index.js';
import { type KubeClient, type KubeObject, type ResourceType, statusOf } from './kube.js';

export const LEASE_RESOURCE: ResourceType = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };

export interface LeaderElectionOptions {
  kube: KubeClient;
  namespace: string;
  /** The Lease's name, shared by every replica. */
  name: string;
  /** Unique per replica. */
  identity: string;
  logger: Logger;
  /** How long a silent holder keeps the Lease, ms (default 15 s). */
  leaseDurationMs?: number;
  /** How long a leader keeps leading without a successful renewal, ms (default 10 s). */
  renewDeadlineMs?: number;
  /** Pause between attempts and renewals, ms (default 2 s). */
  retryPeriodMs?: number;
  now?: () => number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  readonly #o: Required<Omit<LeaderElectionOptions, 'logger' | 'kube'>> &
    Pick<LeaderElectionOptions, 'logger' | 'kube'>;
  /** The last Lease record seen, and when (local clock) it last changed. */
  #observed: { key: string; at: number } | undefined;
  readonly #stopped = new AbortController();
  #running: Promise<void> | undefined;

  constructor(options: LeaderElectionOptions) {
    this.#o = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      now: Date.now,
      ...options,
    };
    if (this.#o.renewDeadlineMs >= this.#o.leaseDurationMs)
      throw new Error('leader election: the renew deadline must be shorter than the lease duration');
  }

  /**
   * Campaigns until `close()`. Each time this replica becomes leader, `lead` runs with a
   * signal that aborts when leadership is lost or on close; `lead` resolves once its work
   * has stopped.
   */
  run(lead: (signal: AbortSignal) => Promise<void>): Promise<void> {
    this.#running ??= this.#campaign(lead);
    return this.#running;
  }

  /** Stops leading (if leading), releases the Lease and ends `run`. */
  async close(): Promise<void> {
    this.#stopped.abort();
    await this.#running;
  }

  async #campaign(lead: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const { logger, identity, name, namespace } = this.#o;
    while (!this.#stopped.signal.aborted) {
      if (!(await this.#tryAcquireOrRenew())) {
        await this.#pause();
        continue;
      }
      logger.info({ lease: `${namespace}/${name}`, identity }, 'leading');
      const leadership = new AbortController();
      const leading = lead(leadership.signal).catch((err: unknown) =>
        logger.error({ err }, 'the leader’s work failed'),
      );
      let renewed = this.#o.now();
      while (!this.#stopped.signal.aborted) {
        await this.#pause();
        if (this.#stopped.signal.aborted) break;
        if (await this.#tryAcquireOrRenew()) renewed = this.#o.now();
        else if (this.#o.now() - renewed > this.#o.renewDeadlineMs) {
          logger.warn(
            { lease: `${namespace}/${name}`, identity },
            'leadership lost: the lease was not renewed',
          );
          break;
        }
      }
      leadership.abort();
      await leading;
      if (this.#stopped.signal.aborted) await this.#release();
    }
  }

  #pause(): Promise<void> {
    return sleepUnlessAborted(this.#o.retryPeriodMs, this.#stopped.signal);
  }

  /** One attempt; true when this replica holds the Lease afterwards. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const { kube, namespace, name, identity, logger } = this.#o;
    const now = this.#o.now();
    const spec = (holder: string, previous: LeaseSpec | undefined): LeaseSpec => ({
      holderIdentity: holder,
      leaseDurationSeconds: Math.ceil(this.#o.leaseDurationMs / 1000),
      acquireTime:
        previous?.holderIdentity === identity && previous.acquireTime !== undefined
          ? previous.acquireTime
          : microTime(now),
      renewTime: microTime(now),
      leaseTransitions:
        (previous?.leaseTransitions ?? 0) +
        (previous !== undefined && previous.holderIdentity !== identity ? 1 : 0),
    });
    try {
      const lease = await kube.get(LEASE_RESOURCE, namespace, name);
      if (lease === undefined) {
        const created = await kube.create(LEASE_RESOURCE, namespace, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: { ...spec(identity, undefined), leaseTransitions: 0 },
        });
        this.#observe(created, now);
        return true;
      }
      this.#observe(lease, now);
      const current = (lease.spec ?? {}) as LeaseSpec;
      const holder = current.holderIdentity ?? '';
      const expired = (this.#observed?.at ?? now) + this.#o.leaseDurationMs <= now;
      if (holder !== '' && holder !== identity && !expired) return false;
      const updated = await kube.replace(LEASE_RESOURCE, {
        ...lease,
        spec: { ...lease.spec, ...spec(identity, current) },
      });
      this.#observe(updated, now);
      return true;
    } catch (err) {
      // 409: another replica wrote first; anything else: the API is unreachable for now.
      if (statusOf(err) !== 409) logger.debug({ err, lease: `${namespace}/${name}` }, 'lease attempt failed');
      return false;
    }
  }

  #observe(lease: KubeObject, now: number): void {
    const spec = (lease.spec ?? {}) as LeaseSpec;
    const key = `${spec.holderIdentity ?? ''}|${spec.renewTime ?? ''}|${lease.metadata.resourceVersion ?? ''}`;
    if (this.#observed?.key !== key) this.#observed = { key, at: now };
  }

  /** Hands the Lease back (empty holder) so a successor need not wait for it to expire. */
  async #release(): Promise<void> {
    const { kube, namespace, name, identity, logger } = this.#o;
    try {
      const lease = await kube.get(LEASE_RESOURCE, namespace, name);
      if (lease === undefined || (lease.spec as LeaseSpec | undefined)?.holderIdentity !== identity) return;
      await kube.replace(LEASE_RESOURCE, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: microTime(this.#o.now()),
        },
      });
      logger.info({ lease: `${namespace}/${name}`, identity }, 'lease released');
    } catch (err) {
      logger.warn(
        { err, lease: `${namespace}/${name}` },
        'could not release the lease; it expires on its own',
      );
    }
  }
}
