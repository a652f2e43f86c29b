-- DropIndex
DROP INDEX "WebhookReceipt_shopDomain_receivedAt_idx";

-- AlterTable
ALTER TABLE "OutboxMessage" ADD COLUMN     "sends" INTEGER NOT NULL DEFAULT 0,
ALTER COLUMN "latencyMs" SET DATA TYPE BIGINT;

-- AlterTable
ALTER TABLE "WebhookReceipt" ADD COLUMN     "apiVersion" TEXT,
ADD COLUMN     "body" TEXT,
ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'webhook',
ADD COLUMN     "partition" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "processedAt" TIMESTAMP(3),
ADD COLUMN     "triggeredAt" TIMESTAMP(3),
ALTER COLUMN "outcome" DROP NOT NULL;

-- AlterTable
ALTER TABLE "WorkspacePacer" DROP COLUMN "nextSlotAt",
ADD COLUMN     "nextSendUs" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "takenBy" TEXT;

-- CreateTable
CREATE TABLE "ReceiptLease" (
    "partition" INTEGER NOT NULL,
    "owner" TEXT,
    "leasedUntil" TIMESTAMP(3),

    CONSTRAINT "ReceiptLease_pkey" PRIMARY KEY ("partition")
);

-- CreateTable
CREATE TABLE "ShopDue" (
    "shopId" TEXT NOT NULL,
    "dueAt" TIMESTAMP(3),
    "version" INTEGER NOT NULL DEFAULT 0,
    "leasedBy" TEXT,
    "leasedUntil" TIMESTAMP(3),

    CONSTRAINT "ShopDue_pkey" PRIMARY KEY ("shopId")
);

-- CreateTable
CREATE TABLE "OrderSummary" (
    "shopId" TEXT NOT NULL,
    "orderId" TEXT NOT NULL,
    "email" TEXT,
    "customerId" TEXT,
    "summary" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "OrderSummary_pkey" PRIMARY KEY ("shopId","orderId")
);

-- CreateTable
CREATE TABLE "FulfillmentState" (
    "shopId" TEXT NOT NULL,
    "fulfillmentId" TEXT NOT NULL,
    "orderId" TEXT,
    "email" TEXT,
    "state" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FulfillmentState_pkey" PRIMARY KEY ("shopId","fulfillmentId")
);

-- CreateTable
CREATE TABLE "ProductInfo" (
    "shopId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "handle" TEXT,
    "url" TEXT,
    "imageUrl" TEXT,
    "variantImages" TEXT NOT NULL DEFAULT '{}',
    "fetchedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ProductInfo_pkey" PRIMARY KEY ("shopId","productId")
);

-- CreateTable
CREATE TABLE "WebPixel" (
    "shopId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "webPixelId" TEXT,
    "state" TEXT NOT NULL,
    "error" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WebPixel_pkey" PRIMARY KEY ("shopId")
);

-- CreateIndex
CREATE INDEX "ShopDue_dueAt_idx" ON "ShopDue"("dueAt");

-- CreateIndex
CREATE INDEX "OrderSummary_shopId_customerId_idx" ON "OrderSummary"("shopId", "customerId");

-- CreateIndex
CREATE INDEX "OrderSummary_shopId_email_idx" ON "OrderSummary"("shopId", "email");

-- CreateIndex
CREATE INDEX "FulfillmentState_shopId_orderId_idx" ON "FulfillmentState"("shopId", "orderId");

-- CreateIndex
CREATE INDEX "FulfillmentState_shopId_email_idx" ON "FulfillmentState"("shopId", "email");

-- CreateIndex
CREATE UNIQUE INDEX "WebPixel_key_key" ON "WebPixel"("key");

-- CreateIndex
CREATE INDEX "WebhookReceipt_partition_processedAt_id_idx" ON "WebhookReceipt"("partition", "processedAt", "id");

-- CreateIndex
CREATE INDEX "WebhookReceipt_processedAt_receivedAt_idx" ON "WebhookReceipt"("processedAt", "receivedAt");

-- CreateIndex
CREATE INDEX "WebhookReceipt_shopDomain_processedAt_idx" ON "WebhookReceipt"("shopDomain", "processedAt");

-- AddForeignKey
ALTER TABLE "ShopDue" ADD CONSTRAINT "ShopDue_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OrderSummary" ADD CONSTRAINT "OrderSummary_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FulfillmentState" ADD CONSTRAINT "FulfillmentState_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ProductInfo" ADD CONSTRAINT "ProductInfo_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "WebPixel" ADD CONSTRAINT "WebPixel_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

