// Web Vitals in Chromium, measured as Shopify's Built for Shopify grading defines them: CLS from
// 'layout-shift' entries without recent input, summed per session window (shifts less than 1 s
// apart, a window at most 5 s long) and the largest window taken; LCP from the last
// 'largest-contentful-paint' entry; INP from 'event' entries (durationThreshold 16 ms), the worst
// interaction's longest entry. And axe-core's WCAG 2 A/AA rules, run in the page.
import fs from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';

export const THRESHOLDS = { clsMax: 0.1, lcpMaxMs: 2500, inpMaxMs: 200 } as const;

export interface ShiftEntry {
  value: number;
  startTime: number;
  hadRecentInput: boolean;
  sources: Array<{ node: string | null; from: [number, number, number, number]; to: [number, number, number, number] }>;
}

export interface Recorded {
  shifts: ShiftEntry[];
  lcp: Array<{ startTime: number; size: number; element: string | null }>;
  events: Array<{ name: string; duration: number; interactionId: number; target: string | null }>;
}

/** Installed before any script of the page: buffered observers writing into window.__vitals. */
function recorder(): void {
  const describe = (n: Node | null | undefined): string | null => {
    if (!n) return null;
    const el = n instanceof Element ? n : n.parentElement;
    if (!el) return n.nodeName;
    const id = el.id ? `#${el.id}` : '';
    const cls = typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
    const card = el.closest('section.card');
    return `${el.tagName.toLowerCase()}${id}${cls}${card && card !== el ? ` in #${card.id}` : ''}`;
  };
  const rec: Recorded = { shifts: [], lcp: [], events: [] };
  (window as unknown as { __vitals: Recorded }).__vitals = rec;
  const rect = (r: DOMRectReadOnly): [number, number, number, number] => [
    Math.round(r.x),
    Math.round(r.y),
    Math.round(r.width),
    Math.round(r.height),
  ];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries() as unknown as Array<{
      value: number;
      startTime: number;
      hadRecentInput: boolean;
      sources?: Array<{ node: Node | null; previousRect: DOMRectReadOnly; currentRect: DOMRectReadOnly }>;
    }>) {
      rec.shifts.push({
        value: e.value,
        startTime: e.startTime,
        hadRecentInput: e.hadRecentInput,
        sources: (e.sources ?? []).map((s) => ({ node: describe(s.node), from: rect(s.previousRect), to: rect(s.currentRect) })),
      });
    }
  }).observe({ type: 'layout-shift', buffered: true });
  new PerformanceObserver((list) => {
    for (const e of list.getEntries() as unknown as Array<{ startTime: number; size: number; element: Element | null }>)
      rec.lcp.push({ startTime: e.startTime, size: e.size, element: describe(e.element) });
  }).observe({ type: 'largest-contentful-paint', buffered: true });
  new PerformanceObserver((list) => {
    for (const e of list.getEntries() as unknown as Array<{
      name: string;
      duration: number;
      interactionId?: number;
      target: Node | null;
    }>) {
      if (e.interactionId)
        rec.events.push({ name: e.name, duration: e.duration, interactionId: e.interactionId, target: describe(e.target) });
    }
  }).observe({ type: 'event', durationThreshold: 16, buffered: true } as PerformanceObserverInit);
}

/** Makes every page of the context record its Web Vitals from its first byte. */
export async function recordVitals(context: BrowserContext): Promise<void> {
  await context.addInitScript(recorder);
}

export async function recorded(page: Page): Promise<Recorded> {
  return page.evaluate(() => JSON.parse(JSON.stringify((window as unknown as { __vitals: Recorded }).__vitals)) as Recorded);
}

/** CLS as Web Vitals defines it: the largest sum of a session window of shifts without recent input. */
export function cls(shifts: ShiftEntry[]): number {
  let worst = 0;
  let sum = 0;
  let first = -Infinity;
  let last = -Infinity;
  for (const s of [...shifts].filter((x) => !x.hadRecentInput).sort((a, b) => a.startTime - b.startTime)) {
    if (s.startTime - last > 1000 || s.startTime - first > 5000) {
      sum = 0;
      first = s.startTime;
    }
    sum += s.value;
    last = s.startTime;
    worst = Math.max(worst, sum);
  }
  return worst;
}

/** LCP: the last candidate reported (the page is measured before any input). */
export function lcp(entries: Recorded['lcp']): number | null {
  return entries.length ? entries[entries.length - 1]!.startTime : null;
}

/** INP over a handful of interactions: the worst interaction's longest entry (0 when every entry stayed under 16 ms). */
export function inp(events: Recorded['events']): {
  inp: number;
  byInteraction: Map<number, { duration: number; name: string; target: string | null }>;
} {
  const byInteraction = new Map<number, { duration: number; name: string; target: string | null }>();
  for (const e of events) {
    const seen = byInteraction.get(e.interactionId);
    if (!seen || e.duration > seen.duration) byInteraction.set(e.interactionId, { duration: e.duration, name: e.name, target: e.target });
  }
  return { inp: Math.max(0, ...[...byInteraction.values()].map((x) => x.duration)), byInteraction };
}

/** The shifts' worst offenders, for a failure message: which element moved, from where to where. */
export function describeShifts(shifts: ShiftEntry[]): string {
  return shifts
    .filter((s) => !s.hadRecentInput)
    .map(
      (s) =>
        `${s.startTime.toFixed(0)} ms  ${s.value.toFixed(4)}  ${s.sources.map((x) => `${x.node} ${x.from.join(',')} -> ${x.to.join(',')}`).join(' | ')}`,
    )
    .join('\n');
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core's WCAG 2 A and AA rules (and 2.1 / 2.2 A and AA) on the page as it stands. */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  const source = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(source);
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run: (
            ctx: Document,
            opts: unknown,
          ) => Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }>;
        };
      }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] },
      resultTypes: ['violations'],
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  });
}
