// The storefront pixel's server side, assembled from the config: stage 2 (stage.ts), the key
// cache of stage 1 (keys.ts; the route is src/http/pixel.route.ts) and the expiry sweeper.
import type { Config } from '../config';
import type { Db } from '../db/client';
import type { PixelStage } from '../intake/processor';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { createPixelKeys, type PixelKeys } from './keys';
import { createPixelStage } from './stage';
import { PixelStore } from './store';
import { createPixelSweeper, type PixelSweeper } from './sweeper';

export interface Storefront {
  stage: PixelStage;
  keys: PixelKeys;
  sweeper: PixelSweeper;
}

export function createStorefront(deps: { config: Config; db: Db; logger: Logger; metrics: Metrics; now: () => Date }): Storefront {
  const { config, db, logger, metrics, now } = deps;
  const p = config.pixel;
  return {
    stage: createPixelStage({
      store: new PixelStore(db), metrics, now,
      anonymousMs: p.anonymousHours * 3_600_000,
      identityMs: p.identityDays * 86_400_000,
      browseDelayMs: p.browseDelayMinutes * 60_000,
      cartDelayMs: p.cartDelayMinutes * 60_000,
    }),
    keys: createPixelKeys(db, logger),
    sweeper: createPixelSweeper({ db, logger, metrics, now }),
  };
}
