-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_PixelEvent" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "occurredAt" DATETIME NOT NULL,
    "data" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "waitsFor" TEXT NOT NULL DEFAULT 'email',
    "describeAt" DATETIME,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "PixelEvent_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_PixelEvent" ("clientId", "data", "eventId", "expiresAt", "id", "name", "occurredAt", "shopId") SELECT "clientId", "data", "eventId", "expiresAt", "id", "name", "occurredAt", "shopId" FROM "PixelEvent";
DROP TABLE "PixelEvent";
ALTER TABLE "new_PixelEvent" RENAME TO "PixelEvent";
CREATE INDEX "PixelEvent_shopId_clientId_id_idx" ON "PixelEvent"("shopId", "clientId", "id");
CREATE INDEX "PixelEvent_expiresAt_idx" ON "PixelEvent"("expiresAt");
CREATE INDEX "PixelEvent_describeAt_idx" ON "PixelEvent"("describeAt");
CREATE INDEX "PixelEvent_shopId_describeAt_idx" ON "PixelEvent"("shopId", "describeAt");
CREATE TABLE "new_PixelStat" (
    "shopId" TEXT NOT NULL,
    "hour" INTEGER NOT NULL,
    "pending" INTEGER NOT NULL DEFAULT 0,
    "vouched" INTEGER NOT NULL DEFAULT 0,
    "expired" INTEGER NOT NULL DEFAULT 0,
    "dropped" INTEGER NOT NULL DEFAULT 0,
    "limited" INTEGER NOT NULL DEFAULT 0,
    "unavailable" INTEGER NOT NULL DEFAULT 0,

    PRIMARY KEY ("shopId", "hour"),
    CONSTRAINT "PixelStat_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_PixelStat" ("dropped", "expired", "hour", "limited", "pending", "shopId", "vouched") SELECT "dropped", "expired", "hour", "limited", "pending", "shopId", "vouched" FROM "PixelStat";
DROP TABLE "PixelStat";
ALTER TABLE "new_PixelStat" RENAME TO "PixelStat";
CREATE INDEX "PixelStat_hour_idx" ON "PixelStat"("hour");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

