// One message's send: the request with the shop's key, its attempt record, the metrics and the
// usage counts, then the retry policy's decision (retry-policy.ts) applied: delivered
// (completer.ts), rescheduled, dead, held with its shop, or its workspace paused. The connection's
// health hears of every outcome (connection-health.ts).
import type { SendEventBody, ServiceClient, ServiceResult } from '../../integrations/service/types';
import { DELIVERY_CLASSES, HISTORY } from '../classes';
import type { AttemptRecord, ClaimedMessage } from '../message';
import type { Pacer } from '../pacer';
import { decideRetry } from '../retry-policy';
import type { UsageStats } from '../usage-stats';
import { recordAccepted, type CompleterDeps } from './completer';
import type { ConnectionHealth } from './connection-health';
import type { ReadyShop } from './shop-context';

export interface DeliverDeps extends CompleterDeps {
  client: ServiceClient;
  pacer: Pacer;
  health: ConnectionHealth;
  /** Sends and expiries per shop, hour and event, written in batches. */
  usage: UsageStats;
  random?: () => number;
  /** Called once a contact delete's row was scrubbed of its address (sent, or dead). */
  onScrubbed?: () => void;
}

/** What a step of a lane tells it: go on, or end (its shop due again no sooner than `notBefore`, when set). */
export type LaneStep = { kind: 'continue' } | { kind: 'end'; notBefore?: Date };
export type LaneEnd = Extract<LaneStep, { kind: 'end' }>;

/** Sends `msg` for its shop with the shop's key, and applies the outcome: the lane ends after a 429, a hold or a pause. */
export async function deliver(
  deps: DeliverDeps,
  workerId: string,
  msg: ClaimedMessage,
  ctx: ReadyShop,
  shopId: string,
  onSent?: (at: number) => void,
): Promise<LaneStep> {
  const { client, repo, pacer, metrics, logger, health } = deps;
  const startedAt = deps.now();
  let result: ServiceResult<unknown>;
  if (msg.kind === 'contact_delete') {
    result = await client.deleteContact(ctx.apiKey, msg.email ?? '', { onSent });
  } else {
    const body = JSON.parse(msg.body) as SendEventBody;
    result = await client.sendEvent(ctx.apiKey, body, { onSent });
  }
  const finishedAt = deps.now();
  const attempt: AttemptRecord = {
    attempt: msg.attempts,
    startedAt,
    durationMs: Math.max(0, Math.round(result.durationMs)),
    statusCode: result.status ?? null,
    outcome: result.kind,
    error: result.kind === 'ok' ? null : result.message,
    workerId,
  };
  metrics.deliveries.inc({ outcome: result.kind });
  // a request made is budget spent, whatever its outcome
  metrics.classSends.inc({ class: DELIVERY_CLASSES[msg.deliveryClass] });
  deps.usage.add(shopId, msg.eventName, msg.deliveryClass, startedAt, { sends: 1 });
  if (result.kind === 'rate_limited') metrics.rateLimited.inc();
  const scrub = msg.kind === 'contact_delete';
  if (result.kind === 'ok') {
    // the service has it: from here on, nothing may send it again
    await recordAccepted(deps, workerId, msg, finishedAt, attempt, scrub);
    if (scrub) deps.onScrubbed?.();
    if (msg.deliveryClass !== HISTORY) metrics.deliveryLatency.observe(Math.max(0, finishedAt.getTime() - msg.dueAt.getTime()) / 1000);
    health.delivered(shopId, finishedAt);
    await pacer.observe(ctx.workspaceId, result.rate, false, undefined, startedAt.getTime()).catch(() => undefined);
    return { kind: 'continue' };
  }
  await pacer.observe(ctx.workspaceId, result.rate, result.kind === 'rate_limited', result.retryAfterMs, startedAt.getTime());
  const yieldLane = result.kind === 'rate_limited';
  if (result.kind === 'not_acceptable')
    logger.error({ messageId: msg.id }, 'the service answered 406 Not Acceptable: our request headers are wrong (a bug)');
  const refused = !result.mayHaveArrived;
  // a 404 while the shop is already held for one holds this message too, at its first try
  const shopState = result.kind === 'not_found' ? { heldForNotFound: await repo.isHeld(shopId, 'service_not_found') } : {};
  const decision = decideRetry(
    result,
    msg.attempts,
    msg.dueAt,
    finishedAt,
    deps.random,
    { sends: msg.sends - (refused ? 1 : 0), maxSends: repo.maxSends },
    shopState,
  );
  // the page shows the error; a refused key also marks the connection until a valid key is saved
  if (decision.action === 'hold' && decision.reason === 'invalid_key') await health.keyRefused(shopId, result.message, finishedAt);
  else await health.failed(shopId, result.message, finishedAt);
  switch (decision.action) {
    case 'retry':
      await repo.reschedule(msg, workerId, decision.runAt, decision.reason, attempt, refused, finishedAt);
      // a 429: the lane gives its batch back and waits out the slow-down unclaimed
      return { kind: yieldLane ? 'end' : 'continue' };
    case 'dead':
      logger.warn({ messageId: msg.id, shopId, reason: decision.reason }, 'delivery is dead');
      await repo.markDead(msg, workerId, decision.reason, attempt, finishedAt, scrub);
      if (scrub) deps.onScrubbed?.();
      return { kind: 'continue' };
    case 'hold':
      if (decision.reason === 'invalid_key') {
        logger.warn({ shopId }, 'the service refused the API key; holding the shop’s deliveries until a valid key is saved');
      } else {
        // the key is fine: the address is wrong (holds.ts re-probes it and logs it for the operator)
        logger.warn(
          { shopId, err: result.message },
          'the email service address answered 404; holding the shop’s deliveries until it answers',
        );
      }
      await repo.markHeld(msg, workerId, decision.reason, result.message, attempt, finishedAt);
      await repo.holdShop(shopId, decision.reason, finishedAt);
      return { kind: 'end' };
    case 'pause_workspace':
      logger.warn(
        { workspaceId: ctx.workspaceId, until: decision.until.toISOString() },
        'the service blocked the workspace; pausing its deliveries',
      );
      await pacer.pause(ctx.workspaceId, decision.until, decision.reason);
      await repo.reschedule(msg, workerId, decision.runAt, decision.reason, attempt, refused, finishedAt);
      return { kind: 'end' };
  }
}
