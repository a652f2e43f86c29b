// The pipeline's moving parts, assembled: stage 1 (the intake's group commit), stage 2 (the
// receipt processor and the use cases it runs), and delivery (the worker), joined by wake-ups.
// server.ts builds it once per process and starts the parts the process's role runs.
import type { Config } from '../config';
import type { SecretBox } from '../crypto/secret-box';
import type { Db } from '../db/client';
import { createErasure } from '../db/erasure';
import { ForwardStore } from '../processing/forward/forward-store';
import { createIntake, type Intake } from '../intake/intake';
import { ReceiptProcessor, type ProcessorDeps } from '../processing/processor';
import type { StorefrontStage, SideHandler } from '../processing/plan';
import type { SideEffectTopic } from '../processing/topics';
import { ReceiptStore } from '../intake/receipt-store';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { ShopQueue, type DueEntry } from '../outbox/due';
import type { Pacer } from '../outbox/pacer';
import type { OutboxRepository } from '../outbox/repository';
import { wakeupsOf, type Wakeups } from '../db/wakeups';
import type { WorkerTuning } from '../outbox/delivery/tuning';
import { DeliveryWorker } from '../outbox/delivery/worker';
import type { ServiceClient } from '../integrations/service/types';
import { createForwardReceipts, type EnrichItems, type ForwardDeps } from '../processing/forward/forward-receipts';
import { createEmailKeys } from '../processing/storefront/email-keys';
import { createGdpr } from '../processing/privacy/gdpr';

export interface PipelineDeps {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  repo: OutboxRepository;
  pacer: Pacer;
  client: ServiceClient;
  secrets: SecretBox;
  /** Topics handled beside the forwarded ones (bulk operations, scopes, products). */
  sideHandlers: Record<SideEffectTopic, SideHandler>;
  /** Extra mapping input (abandonment policy, product images). */
  mapContext?: ForwardDeps['mapContext'];
  onUninstalled?: (shopId: string) => Promise<void>;
  /** Stage 2 for storefront batches (receipts of kind 'pixel'). */
  storefront?: StorefrontStage;
  /** Product images and links for line items. */
  enrich?: EnrichItems;
  /** The delivery worker's tuning beyond the configuration's (tests). */
  worker?: Partial<WorkerTuning>;
  processor?: ProcessorTimings;
}

/** Stage 2's timings a caller may set (tests, the server's options). */
export type ProcessorTimings = Partial<
  Pick<ProcessorDeps, 'batchSize' | 'turnMs' | 'leaseMs' | 'safetyPollMs' | 'retentionMs' | 'lingerMs'>
>;

export interface Pipeline {
  intake: Intake;
  receipts: ReceiptStore;
  processor: ReceiptProcessor;
  worker: DeliveryWorker;
  queue: ShopQueue;
  wakeups: Wakeups;
  /** A writer outside stage 2 queued messages for a shop: index them as due and wake the workers. */
  notifyQueued(shopId: string, runAt?: Date): void;
  /** Starts stage 2 and delivery (worker roles). */
  startWorkers(): Promise<void>;
  stop(): Promise<void>;
}

export function buildPipeline(deps: PipelineDeps): Pipeline {
  const { config, db, logger, metrics, now } = deps;
  const provider = config.dbProvider;
  const wakeups = wakeupsOf(db, config.databaseUrl, { logger });
  const queue = new ShopQueue(db, provider);
  const receipts = new ReceiptStore(db, provider);

  const intake = createIntake({ receipts, onStored: () => wakeups.publish('receipts') });

  // without NOTIFY (SQLite), processes sharing one database find each other's work by polling, often
  const safetyPollMs = wakeups.reachesOtherProcesses ? undefined : 1_000;
  const erasure = createErasure(db, logger);
  const worker = new DeliveryWorker({
    db,
    repo: deps.repo,
    queue,
    pacer: deps.pacer,
    client: deps.client,
    secrets: deps.secrets,
    metrics,
    logger,
    now,
    // a sent contact delete's row was scrubbed of its address: compact its old copies away
    onScrubbed: () => void erasure.afterScrub(),
    requestTimeoutMs: config.service.timeoutMs,
    tuning: { lanes: config.worker.lanes, maxInFlight: config.worker.maxInFlight, classes: config.classes, safetyPollMs, ...deps.worker },
  });
  wakeups.subscribe('due', () => worker.nudge());

  const forwardStore = new ForwardStore(db);
  const processor = new ReceiptProcessor({
    db,
    provider,
    logger,
    metrics,
    now,
    receipts,
    forward: createForwardReceipts({ store: forwardStore, mapContext: deps.mapContext, enrich: deps.enrich }),
    privacy: createGdpr({
      logger,
      receipts,
      erasure,
      now,
      onUninstalled: deps.onUninstalled,
      emailKeys: createEmailKeys(config.encryption),
    }),
    sideHandlers: deps.sideHandlers,
    storefront: deps.storefront,
    // stage 2 indexed the due work in its own transaction: only the wake-up is left
    onDue: (_entries: DueEntry[]) => wakeups.publish('due'),
    safetyPollMs,
    retentionMs: config.receiptRetentionDays * 86_400_000,
    ...deps.processor,
  });
  wakeups.subscribe('receipts', () => processor.nudge());

  return {
    intake,
    receipts,
    processor,
    worker,
    queue,
    wakeups,
    notifyQueued(shopId, runAt) {
      queue
        .lower([{ shopId, runAt: runAt ?? now() }])
        .then(() => wakeups.publish('due'))
        .catch((err: unknown) =>
          logger.warn({ shopId, err: (err as Error).message }, 'could not index queued work as due; the safety reconcile will'),
        );
    },
    async startWorkers() {
      await wakeups.listen();
      processor.start();
      worker.start();
    },
    async stop() {
      await Promise.all([processor.stop(), worker.stop()]);
      await wakeups.close();
    },
  };
}
