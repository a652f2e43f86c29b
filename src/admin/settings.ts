import type { Db } from '../db/client';
import { mergeSettings, parseStoredSettings, type Settings, type SettingsPatch } from '../settings/settings';

export function createSettingsUseCases(db: Db) {
  async function get(shopId: string): Promise<Settings> {
    const row = await db.shopSettings.findUnique({ where: { shopId } });
    return parseStoredSettings(row?.data);
  }
  return {
    get,
    async update(shopId: string, patch: SettingsPatch): Promise<Settings> {
      const next = mergeSettings(await get(shopId), patch);
      const data = JSON.stringify(next);
      await db.shopSettings.upsert({ where: { shopId }, create: { shopId, data }, update: { data } });
      return next;
    },
  };
}

export type SettingsUseCases = ReturnType<typeof createSettingsUseCases>;
