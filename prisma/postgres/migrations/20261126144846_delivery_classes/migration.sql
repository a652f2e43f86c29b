-- DropIndex
DROP INDEX "OutboxMessage_status_shopId_lane_runAt_id_idx";

-- AlterTable: the live/import lane becomes the delivery class (src/outbox/classes.ts, as of this migration)
ALTER TABLE "OutboxMessage" ADD COLUMN     "deliveryClass" INTEGER NOT NULL DEFAULT 0;
UPDATE "OutboxMessage" SET "deliveryClass" = CASE WHEN "lane" = 1 THEN 3
  WHEN "eventName" IN ('checkout_started', 'checkout_abandoned', 'browse_abandoned', 'cart_abandoned', 'customer_created', 'customer_updated', 'email_subscribed') THEN 1
  WHEN "eventName" IN ('viewed_product', 'added_to_cart', 'product_ordered') THEN 2
  ELSE 0 END;
ALTER TABLE "OutboxMessage" DROP COLUMN "lane";

-- AlterTable
ALTER TABLE "WorkspacePacer" ADD COLUMN     "takeSecond" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "takesLastSecond" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "takesThisSecond" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "usageBehaviour" DOUBLE PRECISION NOT NULL DEFAULT 0,
ADD COLUMN     "usageCritical" DOUBLE PRECISION NOT NULL DEFAULT 0,
ADD COLUMN     "usageHistory" DOUBLE PRECISION NOT NULL DEFAULT 0,
ADD COLUMN     "usageTriggers" DOUBLE PRECISION NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "DeliveryUsage" (
    "shopId" TEXT NOT NULL,
    "hour" TIMESTAMP(3) NOT NULL,
    "eventName" TEXT NOT NULL,
    "deliveryClass" INTEGER NOT NULL,
    "sends" INTEGER NOT NULL DEFAULT 0,
    "expired" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "DeliveryUsage_pkey" PRIMARY KEY ("shopId","hour","eventName")
);

-- CreateIndex
CREATE INDEX "DeliveryUsage_hour_idx" ON "DeliveryUsage"("hour");

-- CreateIndex
CREATE INDEX "OutboxMessage_status_shopId_deliveryClass_runAt_id_idx" ON "OutboxMessage"("status", "shopId", "deliveryClass", "runAt", "id");

-- AddForeignKey
ALTER TABLE "DeliveryUsage" ADD CONSTRAINT "DeliveryUsage_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

