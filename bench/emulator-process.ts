// The service emulator in a process of its own, driven over IPC by bench/lib.ts startEmulator().
// The benchmark's process also generates load; sharing its event loop would delay the
// emulator's clock, which stamps every request and decides every 429 (the figures the pacing
// targets are about). Here the emulator's loop does nothing else, and reports its own delay.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startServiceEmulator } from '../sandbox/service-emulator';

interface Call {
  id: number;
  op: string;
  args: Record<string, unknown>;
}

async function main(): Promise<void> {
  const emulator = await startServiceEmulator({
    host: '127.0.0.1',
    rateLimit: Number(process.env.EMULATOR_RATE_LIMIT ?? 10),
    maxRecordedRequests: Number(process.env.EMULATOR_MAX_REQUESTS ?? 100_000),
  });
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();

  const ops: Record<string, (args: Record<string, unknown>) => unknown> = {
    createWorkspaces: ({ count, rateLimit }) =>
      Array.from({ length: Number(count) }, () => {
        const ws = emulator.createWorkspace({ rateLimit: rateLimit === undefined ? undefined : Number(rateLimit) });
        return { id: ws.id, apiKey: ws.apiKey };
      }),
    requests: ({ workspaceIds }) => {
      const only = Array.isArray(workspaceIds) ? new Set(workspaceIds as string[]) : null;
      return emulator
        .requests()
        .filter((r) => !only || (r.workspaceId !== null && only.has(r.workspaceId)))
        .map((r) => ({ path: r.path, status: r.status, at: r.at, workspaceId: r.workspaceId }));
    },
    eventsSince: ({ n }) =>
      emulator
        .events()
        .slice(Number(n))
        .map((e) => ({
          workspaceId: e.workspaceId,
          eventName: e.event_name,
          sourceId: String(e.event_attribute.source_id),
          receivedAt: e.receivedAt,
        })),
    loopLag: () => {
      const out = { p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 };
      lag.reset();
      return out;
    },
    reset: () => emulator.reset(),
  };

  process.on('message', (raw) => {
    const call = raw as Call;
    try {
      const fn = ops[call.op];
      if (!fn) throw new Error(`unknown emulator op ${call.op}`);
      process.send!({ id: call.id, result: fn(call.args ?? {}) ?? null });
    } catch (err) {
      process.send!({ id: call.id, error: (err as Error).message });
    }
  });
  process.on('SIGTERM', () => {
    void emulator.close().then(() => process.exit(0));
  });
  process.on('disconnect', () => {
    void emulator.close().then(() => process.exit(0));
  });
  process.send!({ ready: emulator.url });
}

main().catch((err: unknown) => {
  process.stderr.write(`emulator process failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
