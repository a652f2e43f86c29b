// A diagnostic, not a benchmark: what a new PostgreSQL connection pays the first time it runs
// the delivery's kind of statements, with and without the warm-up a server's connections get at
// start (src/db/client.ts warmCatalog: a planned read of every table). Alternates cold and
// warmed connections on a fresh database with the app's schema, and prints each first run.
//   npx tsx bench/pg-catalog-probe.ts [pairs]
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { appTables, warmCatalog } from '../src/db/client';
import { createBenchDatabase, fmt, runMain } from './lib';

// the first statements of a delivery lane, in shape: claim, lease, pacer, context
const FIRST = [
  `SELECT "id" FROM "OutboxMessage" WHERE "status" = 'queued' AND "shopId" = 'x' AND "deliveryClass" = 0 AND "runAt" <= now() ORDER BY "runAt", "id" LIMIT 3`,
  `UPDATE "ShopDue" SET "leasedBy" = NULL WHERE "shopId" = 'x'`,
  `UPDATE "WorkspacePacer" SET "nextSendUs" = 0 WHERE "workspaceId" = 'x'`,
  `SELECT "s"."id" FROM "Shop" AS "s" LEFT JOIN "Connection" AS "c" ON "c"."shopId" = "s"."id" WHERE "s"."domain" = 'x'`,
];

async function main(): Promise<void> {
  const pairs = Number(process.argv[2] ?? 8);
  const db = await createBenchDatabase('postgres');
  const times = { cold: [] as number[], warmed: [] as number[] };
  try {
    for (let i = 0; i < pairs; i++) {
      for (const mode of ['cold', 'warmed'] as const) {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        try {
          await client.query('SELECT 1');
          if (mode === 'warmed') await warmCatalog(client, await appTables(client));
          const t0 = performance.now();
          for (const sql of FIRST) await client.query(sql);
          times[mode].push(performance.now() - t0);
        } finally {
          await client.end();
        }
      }
    }
  } finally {
    await db.drop();
  }
  const list = (v: number[]) => v.map((x) => fmt(x, 1)).join(', ');
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  console.log(
    `First run of ${FIRST.length} statements on a new connection (ms), ${pairs} pairs: cold ${list(times.cold)} (median ${fmt(median(times.cold), 1)}); warmed ${list(times.warmed)} (median ${fmt(median(times.warmed), 1)})`,
  );
}

runMain(main);
