// SQLite commits in WAL mode with synchronous = NORMAL, which syncs the WAL to disk at
// checkpoints only: an OS crash or a power loss may take back the last commits. A commit that a
// promise rests on is synced first (RawDb.flush): a webhook's receipt before Shopify gets its
// 200, a delivery the service accepted before the lane goes on. strace shows the kernel's view:
// the sync of the WAL completes between the commit's write and the answer. PostgreSQL's commits
// wait for the WAL flush themselves (synchronous_commit is on for both).
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { rawOf, sqliteFile } from '../../src/db/client';
import { OutboxRepository } from '../../src/outbox/repository';
import { openTestDb, testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { straceAvailable, traceSyscalls, walSyncedBefore, type SyscallTrace } from '../helpers/syscalls';

const sqliteWithStrace = testProvider === 'sqlite' && straceAvailable();
if (testProvider === 'sqlite' && !sqliteWithStrace)
  console.warn('durability tests skipped: strace cannot trace this process here (apt-get install strace)');

(sqliteWithStrace ? describe : describe.skip)('SQLite commits that a promise rests on are on disk first (strace)', () => {
  let trace: SyscallTrace | undefined;
  afterEach(async () => {
    await trace?.stop();
    trace = undefined;
  });

  describe('stage 1', () => {
    let s: Stack;
    beforeAll(async () => {
      s = await startStack({ env: { ROLE: 'web' } });
    });
    afterAll(() => s.close());

    it("answers a webhook's 200 only after the WAL holding its receipt is synced to disk", async () => {
      const wal = `${path.resolve(sqliteFile(s.database.url))}-wal`;
      trace = await traceSyscalls();
      for (let i = 0; i < 3; i++) {
        const res = await s.webhook(
          'orders/create',
          { id: 1000 + i, email: `durable-${i}@example.com` },
          { webhookId: `durable-${i}-${randomUUID()}` },
        );
        expect(res.status).toBe(200);
      }
      const lines = await trace.stop();
      trace = undefined;
      const answers = lines.flatMap((l, i) => (/\bwritev?\(\d+<(socket|TCP)[^>]*>.*HTTP\/1\.1 200/.test(l) ? [i] : []));
      expect(answers).toHaveLength(3);
      // each answer comes after the sync of the commit written last before it
      expect(answers.map((i) => walSyncedBefore(lines, i, wal))).toEqual([true, true, true]);
    });
  });

  describe('delivery outcomes', () => {
    let db: Awaited<ReturnType<typeof openTestDb>>;
    beforeAll(async () => {
      db = await openTestDb();
    });
    afterAll(() => db.close());

    it('has a delivered message on disk when markDelivered resolves', async () => {
      const wal = `${path.resolve(sqliteFile(db.database.url))}-wal`;
      await db.db.shop.create({ data: { id: 'durable-shop', domain: 'durable.myshopify.com' } });
      const now = new Date();
      await db.db.outboxMessage.create({
        data: {
          shopId: 'durable-shop',
          sourceId: 'durable-1',
          topic: 'orders/create',
          eventName: 'order_placed',
          body: '{}',
          runAt: now,
          dueAt: now,
        },
      });
      const repo = new OutboxRepository(db.db, 'sqlite');
      const [msg] = await repo.claim('durable-shop', 'w-durable', [1, 0, 0, 0], new Date(), 30_000);
      expect(msg).toBeDefined();
      trace = await traceSyscalls();
      const at = new Date();
      expect(
        await repo.markDelivered(msg!, 'w-durable', at, {
          attempt: 1,
          startedAt: at,
          durationMs: 5,
          statusCode: 200,
          outcome: 'ok',
          error: null,
        }),
      ).toBe(true);
      trace.mark('DELIVERED-RESOLVED');
      const lines = await trace.stop();
      trace = undefined;
      const marked = lines.findIndex((l) => l.includes('DELIVERED-RESOLVED'));
      expect(marked).toBeGreaterThan(0);
      expect(walSyncedBefore(lines, marked, wal)).toBe(true);
      expect(await db.db.outboxMessage.findFirstOrThrow({ where: { sourceId: 'durable-1' } })).toMatchObject({ status: 'delivered' });
    });

    it('shares syncs between concurrent commits: 100 flushes at once make 2', async () => {
      const wal = `${path.resolve(sqliteFile(db.database.url))}-wal`;
      const raw = rawOf(db.db);
      if (raw.provider !== 'sqlite') throw new Error('sqlite expected');
      await db.db.shop.create({ data: { id: 'durable-shop-2', domain: 'durable-2.myshopify.com' } });
      trace = await traceSyscalls();
      await Promise.all(Array.from({ length: 100 }, () => raw.flush()));
      trace.mark('FLUSHED');
      const lines = await trace.stop();
      trace = undefined;
      const syncs = lines.filter((l) => /\bf(data)?sync\(/.test(l) && l.includes(`<${wal}>`));
      // the first starts at once; those that came while it ran share the one after it (one more
      // may be the checkpoint thread's own, which syncs the WAL before each checkpoint)
      expect(syncs.length).toBeGreaterThanOrEqual(2);
      expect(syncs.length).toBeLessThanOrEqual(3);
    });
  });
});
