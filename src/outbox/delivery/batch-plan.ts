// A lane's arithmetic, pure: how large its next batch is, how many of each delivery class it
// claims (its part of the workspace's plan, classes.ts), the order it sends them in, how long the
// claim locks them, and whether the claim took all the shop had due.
import { planClasses, type Usage } from '../classes';
import type { ClaimedMessage } from '../message';

/** What the shop has due by class (counted up to the batch size), and whether another shop of its workspace has any. */
export interface DueByClass {
  own: number[];
  others: boolean[];
}

/** A quarter second of the workspace's limit per claim, at most `cap`: a message of a higher class never waits behind much. */
export function batchSizeFor(limit: number, cap: number): number {
  return Math.max(1, Math.min(cap, Math.ceil(limit / 4)));
}

/**
 * How many of each class this shop's next batch claims: its part of the workspace's plan (made
 * from the due work of this shop and, `withOthers`, of the other shops). The plan's sends of
 * classes only other shops have are theirs: their lanes take those turns at the shared pacer.
 */
export function planBatch(due: DueByClass, usage: Usage, floors: readonly number[], batchSize: number, withOthers: boolean): number[] {
  const view = due.own.map((n, k) => n + (withOthers && due.others[k] ? batchSize : 0));
  const counts = [0, 0, 0, 0];
  for (const k of planClasses(view, usage, floors, batchSize)) if (counts[k]! < due.own[k]!) counts[k]! += 1;
  return counts;
}

/** The batch in the order the scheduler sends it, the usage moving as each send will move it. */
export function inPlanOrder(batch: ClaimedMessage[], usage: Usage, floors: readonly number[]): ClaimedMessage[] {
  const byClass = [0, 1, 2, 3].map((k) => batch.filter((m) => m.deliveryClass === k));
  const left = byClass.map((l) => l.length);
  return planClasses(left, usage, floors, batch.length).map((k) => byClass[k]!.shift()!);
}

/** How long a claim locks its batch: every send of it at the workspace's pace, the last one's timeout, and 5 s to record it. */
export function lockMsFor(batchSize: number, limit: number, requestTimeoutMs: number): number {
  return Math.ceil(((batchSize + 1) * 1000) / limit) + requestTimeoutMs + 5_000;
}

/** Whether the batch was all the shop had due: each class's count under the cap, every one claimed. */
export function tookAll(due: DueByClass, counts: readonly number[], batchSize: number): boolean {
  return due.own.every((n, k) => n < batchSize && counts[k] === n);
}
