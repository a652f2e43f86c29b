-- AlterTable
ALTER TABLE "PixelEvent" ADD COLUMN     "attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "describeAt" TIMESTAMP(3),
ADD COLUMN     "waitsFor" TEXT NOT NULL DEFAULT 'email';

-- AlterTable
ALTER TABLE "PixelStat" ADD COLUMN     "unavailable" INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "PixelEvent_describeAt_idx" ON "PixelEvent"("describeAt");

-- CreateIndex
CREATE INDEX "PixelEvent_shopId_describeAt_idx" ON "PixelEvent"("shopId", "describeAt");

