import type { Db } from '../db/client';
import { DEFAULT_SETTINGS, mergeSettings, parseStoredSettings, type Settings, type SettingsPatch } from '../settings/settings';

/** `defaults`: a shop's settings until its merchant changes them (Config.settingsDefaults). */
export function createSettingsUseCases(db: Db, defaults: Settings = DEFAULT_SETTINGS) {
  async function get(shopId: string): Promise<Settings> {
    const row = await db.shopSettings.findUnique({ where: { shopId } });
    return parseStoredSettings(row?.data, defaults);
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
