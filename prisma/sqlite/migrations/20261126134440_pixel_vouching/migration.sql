-- CreateTable
CREATE TABLE "PixelShopper" (
    "shopId" TEXT NOT NULL,
    "emailKey" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "checkedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "quotaDay" INTEGER NOT NULL DEFAULT 0,
    "events" INTEGER NOT NULL DEFAULT 0,
    "abandonments" INTEGER NOT NULL DEFAULT 0,

    PRIMARY KEY ("shopId", "emailKey"),
    CONSTRAINT "PixelShopper_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "PixelClaim" (
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "emailKey" TEXT NOT NULL,
    "claimedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "clientId"),
    CONSTRAINT "PixelClaim_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "PixelStat" (
    "shopId" TEXT NOT NULL,
    "hour" INTEGER NOT NULL,
    "pending" INTEGER NOT NULL DEFAULT 0,
    "vouched" INTEGER NOT NULL DEFAULT 0,
    "expired" INTEGER NOT NULL DEFAULT 0,
    "dropped" INTEGER NOT NULL DEFAULT 0,
    "limited" INTEGER NOT NULL DEFAULT 0,

    PRIMARY KEY ("shopId", "hour"),
    CONSTRAINT "PixelStat_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_ProductInfo" (
    "shopId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "handle" TEXT,
    "title" TEXT,
    "currency" TEXT,
    "url" TEXT,
    "imageUrl" TEXT,
    "variantImages" TEXT NOT NULL DEFAULT '{}',
    "variants" TEXT NOT NULL DEFAULT '{}',
    "fetchedAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "productId"),
    CONSTRAINT "ProductInfo_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_ProductInfo" ("fetchedAt", "handle", "imageUrl", "productId", "shopId", "url", "variantImages") SELECT "fetchedAt", "handle", "imageUrl", "productId", "shopId", "url", "variantImages" FROM "ProductInfo";
DROP TABLE "ProductInfo";
ALTER TABLE "new_ProductInfo" RENAME TO "ProductInfo";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "PixelShopper_expiresAt_idx" ON "PixelShopper"("expiresAt");

-- CreateIndex
CREATE INDEX "PixelClaim_shopId_emailKey_idx" ON "PixelClaim"("shopId", "emailKey");

-- CreateIndex
CREATE INDEX "PixelClaim_expiresAt_idx" ON "PixelClaim"("expiresAt");

-- CreateIndex
CREATE INDEX "PixelStat_hour_idx" ON "PixelStat"("hour");


-- Identities made before an email had to be vouched for by Shopify came from emails the browser
-- alone named, and waiting events carry product data the browser alone gave: none is kept.
-- Visitors identify again through a vouched email; their new events carry Shopify's data.
DELETE FROM "PixelVisitor";
DELETE FROM "PixelEvent";

-- Storefront messages not sent yet were built from that data, for those emails: they are not sent.
UPDATE "OutboxMessage" SET "status" = 'cancelled', "lastError" = 'built from storefront data Shopify had not confirmed; not sent', "updatedAt" = CAST(strftime('%s', 'now') AS INTEGER) * 1000
WHERE "topic" = 'pixel/events' AND "status" IN ('queued', 'held');
