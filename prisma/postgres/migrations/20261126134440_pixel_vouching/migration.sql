-- AlterTable
ALTER TABLE "ProductInfo" ADD COLUMN     "currency" TEXT,
ADD COLUMN     "title" TEXT,
ADD COLUMN     "variants" TEXT NOT NULL DEFAULT '{}';

-- CreateTable
CREATE TABLE "PixelShopper" (
    "shopId" TEXT NOT NULL,
    "emailKey" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "checkedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "quotaDay" INTEGER NOT NULL DEFAULT 0,
    "events" INTEGER NOT NULL DEFAULT 0,
    "abandonments" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "PixelShopper_pkey" PRIMARY KEY ("shopId","emailKey")
);

-- CreateTable
CREATE TABLE "PixelClaim" (
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "emailKey" TEXT NOT NULL,
    "claimedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PixelClaim_pkey" PRIMARY KEY ("shopId","clientId")
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

    CONSTRAINT "PixelStat_pkey" PRIMARY KEY ("shopId","hour")
);

-- CreateIndex
CREATE INDEX "PixelShopper_expiresAt_idx" ON "PixelShopper"("expiresAt");

-- CreateIndex
CREATE INDEX "PixelClaim_shopId_emailKey_idx" ON "PixelClaim"("shopId", "emailKey");

-- CreateIndex
CREATE INDEX "PixelClaim_expiresAt_idx" ON "PixelClaim"("expiresAt");

-- CreateIndex
CREATE INDEX "PixelStat_hour_idx" ON "PixelStat"("hour");

-- AddForeignKey
ALTER TABLE "PixelShopper" ADD CONSTRAINT "PixelShopper_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PixelClaim" ADD CONSTRAINT "PixelClaim_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PixelStat" ADD CONSTRAINT "PixelStat_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Identities made before an email had to be vouched for by Shopify came from emails the browser
-- alone named, and waiting events carry product data the browser alone gave: none is kept.
-- Visitors identify again through a vouched email; their new events carry Shopify's data.
DELETE FROM "PixelVisitor";
DELETE FROM "PixelEvent";

-- Storefront messages not sent yet were built from that data, for those emails: they are not sent.
UPDATE "OutboxMessage" SET "status" = 'cancelled', "lastError" = 'built from storefront data Shopify had not confirmed; not sent', "updatedAt" = CURRENT_TIMESTAMP
WHERE "topic" = 'pixel/events' AND "status" IN ('queued', 'held');
