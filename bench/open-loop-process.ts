// The open-loop load generator in a process of its own, driven over IPC by bench/open-loop.ts
// startOpenLoopGenerator(). In the benchmark's process it would share a heap and an event loop
// with autocannon's leftovers, the RSS sampler and every earlier round's figures, and its lag
// (how late it started requests) would count against the server measured. It lives for the
// whole benchmark, so its code is compiled and warm from the warm-up on; a fresh process per
// round would spend its first second loading and compiling while the clock runs. Its requests
// come from a factory named by module and export (bench/ingest.ts, bench/pixel.ts), since a
// closure cannot cross processes.
import { openLoop, type OpenLoopJob, type OpenLoopRequest, type OpenLoopSource } from './open-loop';

async function requestsOf(source: OpenLoopSource): Promise<(i: number) => OpenLoopRequest> {
  const mod = (await import(`./${source.module}`)) as Record<string, () => (i: number) => OpenLoopRequest>;
  const factory = mod[source.factory];
  if (typeof factory !== 'function') throw new Error(`bench/${source.module}.ts exports no ${source.factory}()`);
  // a fresh factory per job: each makes its own ids, so no two jobs send the same webhook id
  return factory();
}

process.on('message', (raw) => {
  void (async () => {
    const { id, job } = raw as { id: number; job: OpenLoopJob };
    try {
      const request = await requestsOf(job.source);
      const result = await openLoop(job.url, { rate: job.rate, seconds: job.seconds, request, warmConnections: job.warmConnections });
      process.send!({ id, result });
    } catch (err) {
      process.send!({ id, error: (err as Error).stack ?? String(err) });
    }
  })();
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
